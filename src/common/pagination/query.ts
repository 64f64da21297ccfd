import { Type } from 'class-transformer';
import { IsInt, IsOptional, IsString, Max, MaxLength, Min, MinLength } from 'class-validator';

/** `limit` (1-200, default 50) and `cursor` (<=2048): the paging parameters most lists share. */
export class PageQuery {
  @IsOptional() @Type(() => Number) @IsInt() @Min(1) @Max(200) limit: number = 50;
  @IsOptional() @IsString() @MinLength(1) @MaxLength(2048) cursor?: string;
}

/** A required half-open window plus paging. */
export class WindowPageQuery extends PageQuery {
  @IsString() @MinLength(1) @MaxLength(64) from: string;
  @IsString() @MinLength(1) @MaxLength(64) to: string;
}
