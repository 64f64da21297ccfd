import { Controller, Get, Query, UseInterceptors } from '@nestjs/common';
import { Action } from 'src/platform/access/decorators';
import { Workspace, WorkspaceContext } from 'src/platform/access/context';
import { READ_MODEL_UNAVAILABLE } from 'src/common/http/document-schema';
import { Answers, Returns } from 'src/common/http/documented';
import { requestWindow } from 'src/common/time/time';
import { BigJsonInterceptor } from 'src/modules/streams/big-json';
import { USAGE_SUMMARY_SCHEMA } from 'src/modules/usage/document-schema';
import { UsageQueryDto } from 'src/modules/usage/dto/usage-query.dto';
import { UsageService } from 'src/modules/usage/usage.service';

@Controller('api/v1/workspaces/:ws/usage')
@UseInterceptors(BigJsonInterceptor)
export class UsageController {
  constructor(private readonly usage: UsageService) {}

  @Get()
  @Returns(USAGE_SUMMARY_SCHEMA)
  @Answers(422, '`invalid UTC window`, `from and to must be provided together`, `invalid cursor` (also a cursor of another `group_by`)', 'ValidationError')
  @Answers(503, `\`${READ_MODEL_UNAVAILABLE}\`: the summary would break its published schema`)
  @Action('usage.read')
  summary(@Workspace() ws: WorkspaceContext, @Query() q: UsageQueryDto) {
    const window = requestWindow(q.from, q.to)!;
    return this.usage.summary(ws.id, { window, groupBy: q.group_by, limit: q.limit, cursor: q.cursor });
  }
}
