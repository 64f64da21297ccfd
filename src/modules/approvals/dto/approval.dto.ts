import { Type } from 'class-transformer';
import { IsIn, IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min, MinLength, ValidateBy } from 'class-validator';
import { NotBlank } from 'src/modules/approvals/dto/approval-policy.dto';

export const DECISION_STATUSES = ['pending', 'approved', 'denied', 'expired', 'invalidated'] as const;
export type DecisionStatus = (typeof DECISION_STATUSES)[number];

export class ListApprovalsQuery {
  @IsOptional() @Type(() => Number) @IsInt() @Min(1) @Max(50) limit: number = 50;
  /** Length and shape are checked by the cursor codec: anything it did not issue is 422 `invalid cursor`. */
  @IsOptional() @IsString() cursor?: string;
  @IsOptional() @IsIn(DECISION_STATUSES) decision_status?: DecisionStatus;
}

export class VoteBody {
  @IsIn(['approve', 'deny']) decision: 'approve' | 'deny';
  @IsString() @MinLength(1) @MaxLength(512) @NotBlank('review reason must not be blank') reason: string;
  @IsInt() @Min(1) expected_revision: number;
}

/** Numeric context only, never raw arguments: an object whose one allowed key is `amount_usd`, a finite number. */
const SafeSummary = () =>
  ValidateBy({
    name: 'safeSummary',
    validator: {
      validate: (value: unknown) =>
        value !== null &&
        typeof value === 'object' &&
        !Array.isArray(value) &&
        Object.entries(value).every(([k, v]) => k === 'amount_usd' && typeof v === 'number' && Number.isFinite(v)),
      defaultMessage: () => 'safe_summary must hold numeric context only (amount_usd)',
    },
  });

const ID = (prefix: string) => new RegExp(`^${prefix}_[A-Za-z0-9_-]{1,60}$`);

/** A held tool call from the gateway (CONTRACT.md 4.2). */
export class HeldCallBody {
  @IsString() @Matches(ID('req')) request_id: string;
  @IsString() @Matches(ID('key')) key_id: string;
  @IsOptional() @IsString() @Matches(ID('inv')) invocation_id?: string | null;
  @IsString() @MinLength(1) @MaxLength(256) tool: string;
  @IsString() @MinLength(1) @MaxLength(256) invocation_tool: string;
  @IsString() @Matches(ID('conn')) connection_id: string;
  @IsIn(['dev', 'stage', 'prod']) env: 'dev' | 'stage' | 'prod';
  @SafeSummary() safe_summary: { amount_usd?: number };
  @IsString() @MinLength(1) @MaxLength(1024) reason: string;
}

/** The gateway's execution report for an approved call. */
export class ExecutionReportBody {
  @IsIn(['succeeded', 'failed']) status: 'succeeded' | 'failed';
  @IsOptional() @IsString() @Matches(ID('rcp')) receipt_id?: string | null;
  @IsOptional() @IsString() @MinLength(1) @MaxLength(128) error_code?: string | null;
  @IsOptional() @IsString() @MinLength(1) @MaxLength(256) digest?: string | null;
}
