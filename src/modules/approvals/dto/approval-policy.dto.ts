import { Allow, IsDefined, IsString, MaxLength, MinLength, ValidateBy, ValidationOptions } from 'class-validator';

/** A string that is not only whitespace (type `value_error` in the 422 entry). */
export const NotBlank = (message: string, options?: ValidationOptions) =>
  ValidateBy({ name: 'notBlank', validator: { validate: (value: unknown) => typeof value === 'string' && value.trim().length > 0, defaultMessage: () => message } }, options);

/** Create and revise share one body; `expected_revision` is checked by the service (omitted on create, required on revise). */
export class ApprovalPolicyBody {
  @IsString() @MinLength(1) @MaxLength(128) @NotBlank('name must not be blank') name: string;
  /** Validated by `validateRules` for the specification's exact messages. */
  @IsDefined() @Allow() rules: unknown;
  @Allow() expected_revision?: unknown;
}

/** `expected_revision` alone; checked by the service (required, an integer >= 1). */
export class DisableApprovalPolicyBody {
  @Allow() expected_revision?: unknown;
}
