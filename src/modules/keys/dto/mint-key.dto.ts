import { ArrayMaxSize, IsArray, IsIn, IsInt, IsObject, IsOptional, IsString, Max, MaxLength, Min, MinLength } from 'class-validator';

export const SCOPES = ['mcp', 'llm'] as const;
/** Entries of `allowed_models` / `allowed_tools`. */
export const MAX_PATTERNS = 256;
export const MAX_PATTERN_LENGTH = 256;

/** POST /workspaces/{ws}/keys. `prefix` and `tools_mode` are checked by the service: a bad value is a 400, not a 422. */
export class MintKeyDto {
  @IsString() @MinLength(1) @MaxLength(128) agent_id: string;

  @IsOptional() prefix?: unknown;

  @IsOptional() @IsArray() @ArrayMaxSize(MAX_PATTERNS) @IsString({ each: true }) @MinLength(1, { each: true }) @MaxLength(MAX_PATTERN_LENGTH, { each: true })
  allowed_models?: string[] | null;

  @IsOptional() @IsArray() @ArrayMaxSize(MAX_PATTERNS) @IsString({ each: true }) @MinLength(1, { each: true }) @MaxLength(MAX_PATTERN_LENGTH, { each: true })
  allowed_tools?: string[] | null;

  @IsOptional() tools_mode?: unknown;

  @IsOptional() @IsInt() @Min(0) @Max(Number.MAX_SAFE_INTEGER) budget_micros_usd_month?: number | null;
  @IsOptional() @IsInt() @Min(0) @Max(Number.MAX_SAFE_INTEGER) rpm?: number | null;
  @IsOptional() @IsInt() @Min(0) @Max(Number.MAX_SAFE_INTEGER) tpm?: number | null;

  @IsOptional() @IsArray() @ArrayMaxSize(SCOPES.length) @IsIn(SCOPES, { each: true }) scopes?: string[] | null;

  @IsOptional() @IsObject() attributes?: Record<string, unknown> | null;

  /** RFC 3339 with an explicit offset; parsed by the service (422 when it is not one). */
  @IsOptional() @IsString() @MaxLength(64) expires_at?: string | null;
}
