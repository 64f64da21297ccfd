import { Controller, Get, Query } from '@nestjs/common';
import { Action } from 'src/common/access/decorators';
import { Workspace, WorkspaceContext } from 'src/common/access/context';
import { READ_MODEL_UNAVAILABLE } from 'src/common/http/document-schema';
import { Answers, Returns } from 'src/common/http/documented';
import { windowFromQuery } from 'src/common/time/time';
import { AUDIT_LIST_SCHEMA } from 'src/modules/audit/audit-vocabulary';
import { AuditService } from 'src/modules/audit/audit.service';
import { AuditQueryDto } from 'src/modules/audit/dto/audit-query.dto';

@Controller('api/v1/workspaces/:ws/audit')
export class AuditController {
  constructor(private readonly audit: AuditService) {}

  @Get()
  @Returns(AUDIT_LIST_SCHEMA)
  @Answers(422, '`invalid UTC window`, `from and to must be provided together`, `unknown audit action`, `invalid cursor`', 'ValidationError')
  @Answers(503, `\`${READ_MODEL_UNAVAILABLE}\`: the listing would break its published schema`)
  @Action('audit.read')
  list(@Workspace() ws: WorkspaceContext, @Query() q: AuditQueryDto) {
    const window = windowFromQuery(q.from, q.to)!;
    return this.audit.list(ws.id, { window, action: q.action, userId: q.user_id, target: q.target, limit: q.limit, cursor: q.cursor });
  }
}
