import { ValidateIf } from 'class-validator';

/**
 * A field that may be omitted but is never null. `@IsOptional()` lets a null through as if the field
 * were absent, and a handler that tests `!== undefined` then takes it for a value; with this, a null
 * is validated like any value, so the field's own type check refuses it (422).
 */
export const Omittable = (): PropertyDecorator => ValidateIf((_object: object, value: unknown) => value !== undefined);
