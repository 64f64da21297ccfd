import { Type } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsBoolean, IsIn, IsInt, IsObject, IsOptional, IsString, Max, MaxLength, Min, MinLength } from 'class-validator';

export const AUTH_PREFERENCES = ['oauth2', 'api_key'] as const;
export const SURFACE_PREFERENCES = ['mcp', 'rest'] as const;
export const SOURCE_PREFERENCES = ['native', 'broker_a', 'broker_b'] as const;
export const MAX_PREFERENCES = 8;
export const MAX_QUALITY_BPS = 10000;

/**
 * POST /workspaces/{ws}/route-qualifiers. The `qualifier_id` pattern and the `capability_id`
 * format are checked by the service (400s); `constraint` is a tagged object checked by the
 * service (422 field errors). `max_cost_micros_usd` is published as `max_cost`.
 */
export class UpsertQualifierDto {
  @IsString() @MinLength(1) @MaxLength(128) qualifier_id: string;
  @IsOptional() @IsInt() @Min(1) expected_revision?: number | null;
  @IsOptional() @IsString() capability_id?: string | null;
  @IsOptional() @IsObject() constraint?: Record<string, unknown> | null;
  @IsOptional() @IsArray() @ArrayMaxSize(MAX_PREFERENCES) @IsIn(AUTH_PREFERENCES, { each: true }) prefer_auth?: string[] | null;
  @IsOptional() @IsArray() @ArrayMaxSize(MAX_PREFERENCES) @IsIn(SURFACE_PREFERENCES, { each: true }) prefer_surface?: string[] | null;
  @IsOptional() @IsArray() @ArrayMaxSize(MAX_PREFERENCES) @IsIn(SOURCE_PREFERENCES, { each: true }) prefer_sources?: string[] | null;
  @IsOptional() @IsInt() @Min(0) @Max(MAX_QUALITY_BPS) min_quality?: number | null;
  /** 0 to 2^63-1 by contract; JSON numbers above 2^53-1 lose precision in transit, so they are refused. */
  @IsOptional() @IsInt() @Min(0) @Max(Number.MAX_SAFE_INTEGER) max_cost_micros_usd?: number | null;
  @IsOptional() @IsBoolean() allow_fallbacks?: boolean | null;
}

/** DELETE /workspaces/{ws}/route-qualifiers/{qualifier_id}?expected_revision=N */
export class DeleteQualifierQuery {
  @IsOptional() @Type(() => Number) @IsInt() @Min(1) expected_revision?: number;
}
