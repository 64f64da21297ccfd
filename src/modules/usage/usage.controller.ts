import { Controller, Get, Query, UseInterceptors } from '@nestjs/common';
import { Action } from 'src/common/access/decorators';
import { Workspace, WorkspaceContext } from 'src/common/access/context';
import { windowFromQuery } from 'src/common/time/time';
import { BigJsonInterceptor } from 'src/modules/streams/big-json';
import { UsageQueryDto } from 'src/modules/usage/dto/usage-query.dto';
import { UsageService } from 'src/modules/usage/usage.service';

@Controller('api/v1/workspaces/:ws/usage')
@UseInterceptors(BigJsonInterceptor)
export class UsageController {
  constructor(private readonly usage: UsageService) {}

  @Get()
  @Action('usage.read')
  summary(@Workspace() ws: WorkspaceContext, @Query() q: UsageQueryDto) {
    const window = windowFromQuery(q.from, q.to)!;
    return this.usage.summary(ws.id, { window, groupBy: q.group_by, limit: q.limit, cursor: q.cursor });
  }
}
