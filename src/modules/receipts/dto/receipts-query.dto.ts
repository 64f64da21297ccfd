import { Type } from 'class-transformer';
import { IsInt, IsOptional, IsString, Max, MaxLength, Min, MinLength } from 'class-validator';
import { PageQuery } from 'src/common/pagination/query';

/** Filters are plain strings here: their vocabularies are checked by the service (400 or 422 with the spec's messages). */
export class ReceiptsQueryDto extends PageQuery {
  @IsOptional() @IsString() @MinLength(1) @MaxLength(1024) before?: string;
  @IsOptional() @IsString() state?: string;
  @IsOptional() @IsString() evidence_trust?: string;
  @IsOptional() @IsString() verification_state?: string;
  @IsOptional() @IsString() decision?: string;
  @IsOptional() @IsString() @MinLength(1) @MaxLength(256) tool?: string;
  @IsOptional() @IsString() @MinLength(1) @MaxLength(64) key_id?: string;
  @IsOptional() @IsString() @MinLength(1) @MaxLength(64) connection_id?: string;
  @IsOptional() @IsString() from?: string;
  @IsOptional() @IsString() to?: string;
}

export class ReceiptQueryDto {
  @IsOptional() @Type(() => Number) @IsInt() @Min(1) revision?: number;
}

export class RevisionsQueryDto {
  @IsOptional() @Type(() => Number) @IsInt() @Min(1) @Max(200) limit: number = 50;
  @IsOptional() @Type(() => Number) @IsInt() @Min(1) before_revision?: number;
}
