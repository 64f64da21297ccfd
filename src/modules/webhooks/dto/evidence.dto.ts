import { Type } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsIn, IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min, MinLength, ValidateNested } from 'class-validator';
import { EVIDENCE_TRUST } from 'src/modules/receipts/receipt-values';
import { SIGNATURE_PROFILE_NAMES } from 'src/modules/webhooks/signatures/signature-profiles';

/** Printable text without control characters. */
const TEXT = /^[^\x00-\x1f\x7f]*$/;
/** A safe correlation id: 1-256 visible ASCII characters, no spaces. */
export const SAFE_ID = /^[\x21-\x7e]{1,256}$/;
export const SUBSCRIPTION_ID = /^wsub_[A-Za-z0-9_-]{1,64}$/;
export const RESULT_OUTCOMES = ['passed', 'failed', 'inconclusive'] as const;
export const MAX_RESULTS = 32;

export class EvidenceResultDto {
  @IsString() @MinLength(1) @MaxLength(128) @Matches(TEXT) name: string;
  @IsIn(RESULT_OUTCOMES) outcome: (typeof RESULT_OUTCOMES)[number];
  @IsIn(EVIDENCE_TRUST) trust: (typeof EVIDENCE_TRUST)[number];
}

/**
 * POST /internal/v1/workspaces/{ws}/webhook-evidence: a verified evidence event (spec section 2,
 * Webhook evidence event; no raw body). `idempotency_key` is the optional reflected idempotency
 * key; `batch_position` the authenticated array position for batching providers.
 */
export class WebhookEvidenceDto {
  @IsIn([1]) schema_version: 1;
  @IsString() @Matches(/^evd_[A-Za-z0-9_-]{1,64}$/) evidence_id: string;
  @IsString() @MaxLength(64) workspace_id: string;
  @IsString() @MinLength(1) @MaxLength(64) connection_id: string;
  @IsString() @Matches(SUBSCRIPTION_ID) subscription_id: string;
  @IsString() @MinLength(1) @MaxLength(256) @Matches(TEXT) event_type: string;
  @IsString() @MinLength(1) @MaxLength(256) @Matches(TEXT) provider_event_id: string;
  @IsOptional() @IsString() @Matches(SAFE_ID) upstream_id?: string | null;
  @IsOptional() @IsString() @Matches(SAFE_ID) idempotency_key?: string | null;
  @IsIn(['vendor_signed', 'broker_attested']) trust: 'vendor_signed' | 'broker_attested';
  @IsIn(SIGNATURE_PROFILE_NAMES) signature_profile: string;
  @IsInt() @Min(1) @Max(2 ** 31 - 1) key_version: number;
  @IsString() @Matches(/^[0-9a-f]{64}$/) body_digest: string;
  @IsOptional() @IsInt() @Min(0) @Max(2 ** 31 - 1) batch_position?: number | null;
  @IsArray() @ArrayMaxSize(MAX_RESULTS) @ValidateNested({ each: true }) @Type(() => EvidenceResultDto) results: EvidenceResultDto[];
  /** RFC 3339; parsed by the service. */
  @IsString() @MaxLength(64) received_at: string;
}
