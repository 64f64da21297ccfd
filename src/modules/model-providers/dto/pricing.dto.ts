import { Type } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsInt, IsString, Max, Min, ValidateNested } from 'class-validator';

/** Most entries a pricebook holds. */
export const MAX_PRICES = 1024;

/** One price: integer micro-USD per million tokens of each kind. */
export class PriceEntryDto {
  /** A model name or pattern (same rules as a model connection's pattern; checked by the service). */
  @IsString() model: string;
  @IsInt() @Min(0) @Max(Number.MAX_SAFE_INTEGER) input_micros_usd_per_mtok: number;
  @IsInt() @Min(0) @Max(Number.MAX_SAFE_INTEGER) output_micros_usd_per_mtok: number;
  @IsInt() @Min(0) @Max(Number.MAX_SAFE_INTEGER) cached_micros_usd_per_mtok: number;
  @IsInt() @Min(0) @Max(Number.MAX_SAFE_INTEGER) reasoning_micros_usd_per_mtok: number;
}

/** PUT /workspaces/{ws}/pricing: the whole pricebook, replacing the stored one. */
export class ReplacePricingDto {
  @IsArray() @ArrayMaxSize(MAX_PRICES) @ValidateNested({ each: true }) @Type(() => PriceEntryDto) prices: PriceEntryDto[];
}
