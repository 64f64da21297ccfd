import { Type } from 'class-transformer';
import { IsIn, IsInt, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';
import { Lane, LANES } from 'src/modules/catalog/catalog.schema';
import { CATALOG_CURSOR_MAX, CATALOG_OFFSET_MAX } from 'src/modules/catalog/catalog.service';

/** Browse parameters of the catalog index: any of them turns the whole catalog into a page. */
export class CatalogQueryDto {
  @IsOptional() @IsString() @MaxLength(64) q?: string;
  @IsOptional() @IsString() @MaxLength(64) category?: string;
  @IsOptional() @IsIn(LANES, { message: 'unknown catalog source' }) source?: Lane;
  @IsOptional() @Type(() => Number) @IsInt() @Min(1) @Max(100) limit?: number;
  @IsOptional() @Type(() => Number) @IsInt() @Min(0) @Max(CATALOG_OFFSET_MAX) offset?: number;
  @IsOptional() @IsString() @MaxLength(CATALOG_CURSOR_MAX) cursor?: string;
}
