import { Type } from 'class-transformer';
import { IsInt, IsOptional, Max, Min } from 'class-validator';

/** `from_seq`, `to_seq`: an inclusive seq range; default and maximum the whole trail. */
export class AuditExportQueryDto {
  @IsOptional() @Type(() => Number) @IsInt() @Min(1) @Max(Number.MAX_SAFE_INTEGER) from_seq?: number;
  @IsOptional() @Type(() => Number) @IsInt() @Min(1) @Max(Number.MAX_SAFE_INTEGER) to_seq?: number;
}
