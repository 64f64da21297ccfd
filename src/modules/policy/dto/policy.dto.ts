import { IsOptional, IsString, Matches, MaxLength, ValidateBy } from 'class-validator';

/** Largest policy source, in UTF-8 bytes. */
export const MAX_POLICY_BYTES = 262144;

const bytes = (value: unknown) => (typeof value === 'string' ? Buffer.byteLength(value, 'utf8') : -1);

export class StoreDraftDto {
  // Lengths are UTF-8 bytes; the constraint names give the usual `string_too_short`/`string_too_long` types.
  @IsString()
  @ValidateBy({ name: 'minLength', validator: { validate: (v) => bytes(v) >= 1, defaultMessage: () => 'cedar_text must not be empty' } })
  @ValidateBy({
    name: 'maxLength',
    validator: { validate: (v) => bytes(v) <= MAX_POLICY_BYTES, defaultMessage: () => `cedar_text must be at most ${MAX_POLICY_BYTES} bytes` },
  })
  cedar_text: string;
}

export class PublishPolicyDto {
  @IsString()
  @Matches(/^sha256:[a-f0-9]{64}$/, { message: 'expected_draft_hash must be sha256: followed by 64 lowercase hex characters' })
  expected_draft_hash: string;

  /** Null or omitted for the first revision. */
  @IsOptional()
  @IsString()
  @MaxLength(64)
  expected_revision_id?: string | null;
}
