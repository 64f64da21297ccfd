import { Controller, Get, Query } from '@nestjs/common';
import { Action } from 'src/common/access/decorators';
import { Workspace, WorkspaceContext } from 'src/common/access/context';
import { windowFromQuery } from 'src/common/time/time';
import { AuditService } from 'src/modules/audit/audit.service';
import { AuditQueryDto } from 'src/modules/audit/dto/audit-query.dto';

@Controller('api/v1/workspaces/:ws/audit')
export class AuditController {
  constructor(private readonly audit: AuditService) {}

  @Get()
  @Action('audit.read')
  list(@Workspace() ws: WorkspaceContext, @Query() q: AuditQueryDto) {
    const window = windowFromQuery(q.from, q.to)!;
    return this.audit.list(ws.id, { window, action: q.action, userId: q.user_id, target: q.target, limit: q.limit, cursor: q.cursor });
  }
}
