import { IsOptional, IsString, MaxLength, MinLength } from 'class-validator';
import { WindowPageQuery } from 'src/common/pagination/query';

export class AuditQueryDto extends WindowPageQuery {
  @IsOptional() @IsString() @MinLength(1) @MaxLength(64) action?: string;
  @IsOptional() @IsString() @MinLength(1) @MaxLength(64) user_id?: string;
  @IsOptional() @IsString() @MinLength(1) @MaxLength(128) target?: string;
}
