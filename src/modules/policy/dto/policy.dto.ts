import { Type } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsIn, IsInt, IsObject, IsOptional, IsString, Matches, Max, MaxLength, Min, MinLength, ValidateBy, ValidateNested } from 'class-validator';
import { Omittable } from 'src/common/http/omittable';

/** Largest policy source, in UTF-8 bytes. */
export const MAX_POLICY_BYTES = 262144;

const bytes = (value: unknown) => (typeof value === 'string' ? Buffer.byteLength(value, 'utf8') : -1);

/** `cedar_text` as PUT /policy takes it: a non-empty string of at most MAX_POLICY_BYTES UTF-8 bytes. */
function CedarText(): PropertyDecorator {
  return (target, key) => {
    // Applied in the order stacked decorators would be (bottom up), so the reported constraint is the same.
    ValidateBy({
      name: 'maxLength',
      validator: { validate: (v) => bytes(v) <= MAX_POLICY_BYTES, defaultMessage: () => `cedar_text must be at most ${MAX_POLICY_BYTES} bytes` },
    })(target, key);
    ValidateBy({ name: 'minLength', validator: { validate: (v) => bytes(v) >= 1, defaultMessage: () => 'cedar_text must not be empty' } })(target, key);
    IsString()(target, key);
  };
}

export class StoreDraftDto {
  // Lengths are UTF-8 bytes; the constraint names give the usual `string_too_short`/`string_too_long` types.
  @CedarText()
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

/** Most recorded decisions one replay evaluates, and how many it evaluates unless told. */
export const MAX_REPLAY_LIMIT = 100000;
export const DEFAULT_REPLAY_LIMIT = 10000;

export class ReplayPolicyDto {
  /** Half-open UTC window (both or neither; default the last 7 days), checked by the service with the window helpers. */
  @Omittable() @IsString() from?: string;
  @Omittable() @IsString() to?: string;
  @IsOptional() @IsInt() @Min(1) @Max(100000) limit?: number; // MAX_REPLAY_LIMIT, written out for the OpenAPI document
  /** Replay this source instead of the stored draft. */
  @IsOptional() @CedarText() cedar_text?: string;
}

export class EntityUidDto {
  @IsString() @MinLength(1) @MaxLength(256) type: string;
  @IsString() @MaxLength(1024) id: string;
}

/** Most entities an explain request may carry. */
export const MAX_EXPLAIN_ENTITIES = 1000;

export class ExplainPolicyDto {
  @IsIn(['draft', 'published']) against: 'draft' | 'published';
  /** Take the request from this receipt (of this workspace) instead of the fields below. */
  @Omittable() @IsString() @MinLength(1) @MaxLength(64) receipt_id?: string;
  @Omittable() @ValidateNested() @Type(() => EntityUidDto) principal?: EntityUidDto;
  @Omittable() @ValidateNested() @Type(() => EntityUidDto) action?: EntityUidDto;
  @Omittable() @ValidateNested() @Type(() => EntityUidDto) resource?: EntityUidDto;
  @Omittable() @IsObject() context?: Record<string, unknown>;
  @IsOptional() @IsArray() @ArrayMaxSize(MAX_EXPLAIN_ENTITIES) @IsObject({ each: true }) entities?: Record<string, unknown>[];
}

/** Each side: a revision id of this workspace, `draft` or `published`. */
export class PolicyDiffQueryDto {
  @IsString() @MinLength(1) @MaxLength(64) from: string;
  @IsString() @MinLength(1) @MaxLength(64) to: string;
}
