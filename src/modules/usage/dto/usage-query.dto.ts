import { IsIn, IsOptional } from 'class-validator';
import { WindowPageQuery } from 'src/common/pagination/query';
import { Dimension, DIMENSIONS } from 'src/modules/usage/usage-vocabulary';

export class UsageQueryDto extends WindowPageQuery {
  @IsOptional() @IsIn(Object.keys(DIMENSIONS)) group_by: Dimension = 'kind';
}
