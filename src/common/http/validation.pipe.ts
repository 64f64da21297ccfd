import { ArgumentMetadata, Injectable, PipeTransform } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import { getMetadataStorage, validate, ValidationError } from 'class-validator';
import { FieldError, FieldValidationError } from 'src/common/http/errors';

const TYPES: Record<string, string> = {
  whitelistValidation: 'extra_forbidden',
  isString: 'string_type',
  isInt: 'int_type',
  isNumber: 'number_type',
  isBoolean: 'bool_type',
  isArray: 'list_type',
  isObject: 'dict_type',
  min: 'greater_than_equal',
  max: 'less_than_equal',
  minLength: 'string_too_short',
  maxLength: 'string_too_long',
  arrayMinSize: 'too_short',
  arrayMaxSize: 'too_long',
  isIn: 'enum',
  isEnum: 'enum',
  matches: 'string_pattern_mismatch',
};

function flatten(errors: ValidationError[], where: string, path: (string | number)[] = []): FieldError[] {
  const out: FieldError[] = [];
  for (const error of errors) {
    const loc = [...path, /^\d+$/.test(error.property) ? Number(error.property) : error.property];
    const constraints = error.constraints ?? {};
    const names = Object.keys(constraints);
    if (names.includes('whitelistValidation')) {
      out.push({ loc: [where, ...loc], msg: 'extra fields not permitted', type: 'extra_forbidden' });
    } else if (error.value === undefined && names.length > 0) {
      out.push({ loc: [where, ...loc], msg: 'field required', type: 'missing' });
    } else if (names.length > 0) {
      const name = names[names.length - 1];
      out.push({ loc: [where, ...loc], msg: constraints[name], type: TYPES[name] ?? 'value_error' });
    }
    if (error.children?.length) out.push(...flatten(error.children, where, loc));
  }
  return out;
}

const INT32_MAX = 2 ** 31 - 1;
const INT32_MIN = -(2 ** 31);

/** What the structural checks need of a DTO class: its `@IsInt()` fields (with whether each has its own bounds) and its `@ValidateNested` fields. */
interface Shape {
  integers: { name: string; min: boolean; max: boolean }[];
  nested: { name: string; each: boolean }[];
}
const shapes = new Map<Function, Shape>();
function shapeOf(target: Function): Shape {
  let shape = shapes.get(target);
  if (!shape) {
    const metadata = getMetadataStorage().getTargetValidationMetadatas(target, '', true, false);
    const declared = (name: string, rule: string) => metadata.some((m) => m.propertyName === name && m.name === rule);
    const integers = [...new Set(metadata.filter((m) => m.name === 'isInt').map((m) => m.propertyName))];
    shape = {
      integers: integers.map((name) => ({ name, min: declared(name, 'min'), max: declared(name, 'max') })),
      nested: metadata.filter((m) => m.type === 'nestedValidation').map((m) => ({ name: m.propertyName, each: m.each === true })),
    };
    shapes.set(target, shape);
  }
  return shape;
}

/**
 * What class-validator lets through and no handler can take, checked on the validated instance and
 * its nested DTOs:
 * - every integer is range checked before it can reach SQL: an `@IsInt()` field without its own
 *   `@Max` or `@Min` is held to int32 (the revision and counter columns);
 * - a `@ValidateNested` value (or element, with `each`) must be an object: class-validator validates
 *   an array there element by element, so `prices: [[]]` passed as an empty price.
 */
function structuralErrors(instance: object, loc: (string | number)[]): FieldError[] {
  const out: FieldError[] = [];
  const record = instance as Record<string, unknown>;
  const shape = shapeOf(instance.constructor);
  for (const field of shape.integers) {
    const value = record[field.name];
    if (typeof value !== 'number') continue;
    if (!field.max && value > INT32_MAX) out.push({ loc: [...loc, field.name], msg: `${field.name} must not be greater than ${INT32_MAX}`, type: 'less_than_equal' });
    if (!field.min && value < INT32_MIN) out.push({ loc: [...loc, field.name], msg: `${field.name} must not be less than ${INT32_MIN}`, type: 'greater_than_equal' });
  }
  for (const { name, each } of shape.nested) {
    const value = record[name];
    if (value === undefined || value === null) continue;
    const items: [(string | number)[], unknown][] = each && Array.isArray(value) ? value.map((item, i) => [[...loc, name, i], item]) : [[[...loc, name], value]];
    for (const [at, item] of items) {
      if (Array.isArray(item)) out.push({ loc: at, msg: `${name} must be an object`, type: 'model_type' });
      else if (item !== null && typeof item === 'object') out.push(...structuralErrors(item, at));
    }
  }
  return out;
}

/**
 * Query DTO classes an empty query has passed once: it passes every time (the same defaults meet the
 * same rules), so a list request without query parameters skips class-validator's walk (~20-45 us
 * of CPU, bench/README.md).
 */
const emptyQueryPasses = new WeakSet<Function>();

function isEmpty(value: object): boolean {
  for (const _ in value) return false;
  return true;
}

/**
 * Validates bodies and queries declared with a DTO class: unknown body fields are refused (unknown
 * query parameters are dropped), no implicit
 * type conversion (DTOs convert explicitly), and failures answer 422 with `{loc, msg, type}` entries.
 */
@Injectable()
export class ApiValidationPipe implements PipeTransform {
  async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    const { metatype, type } = metadata;
    if ((type !== 'body' && type !== 'query') || !metatype || [String, Number, Boolean, Object, Array].includes(metatype as never)) {
      return value;
    }
    // A request without a body (no Content-Type) validates as an empty object.
    if (type === 'body' && value === undefined) value = {};
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      throw new FieldValidationError([{ loc: [type], msg: 'value must be a JSON object', type: 'model_type' }]);
    }
    const instance = plainToInstance(metatype, value) as object;
    const empty = type === 'query' && isEmpty(value);
    if (empty && emptyQueryPasses.has(metatype)) return instance;
    const errors = await validate(instance, { whitelist: true, forbidNonWhitelisted: type === 'body', forbidUnknownValues: false });
    if (errors.length > 0) throw new FieldValidationError(flatten(errors, type));
    const structural = structuralErrors(instance, [type]);
    if (structural.length > 0) throw new FieldValidationError(structural);
    if (empty) emptyQueryPasses.add(metatype);
    return instance;
  }
}
