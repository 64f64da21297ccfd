import { Controller, Get, Query, StreamableFile } from '@nestjs/common';
import { Readable } from 'node:stream';
import { Action } from 'src/platform/access/decorators';
import { Workspace, WorkspaceContext } from 'src/platform/access/context';
import { READ_MODEL_UNAVAILABLE } from 'src/common/http/document-schema';
import { Answers, Returns, Streams } from 'src/common/http/documented';
import { queryError } from 'src/common/http/errors';
import { requestWindow } from 'src/common/time/time';
import { AUDIT_LIST_SCHEMA } from 'src/modules/audit/audit-vocabulary';
import { AuditService } from 'src/modules/audit/audit.service';
import { AuditTrailService } from 'src/modules/audit/audit-trail.service';
import { AuditExportQueryDto } from 'src/modules/audit/dto/audit-export-query.dto';
import { AuditQueryDto } from 'src/modules/audit/dto/audit-query.dto';

export const NDJSON = 'application/x-ndjson';

@Controller('api/v1/workspaces/:ws/audit')
export class AuditController {
  constructor(
    private readonly audit: AuditService,
    private readonly trail: AuditTrailService,
  ) {}

  @Get()
  @Returns(AUDIT_LIST_SCHEMA)
  @Answers(422, '`invalid UTC window`, `from and to must be provided together`, `unknown audit action`, `invalid cursor`', 'ValidationError')
  @Answers(503, `\`${READ_MODEL_UNAVAILABLE}\`: the listing would break its published schema`)
  @Action('audit.read')
  list(@Workspace() ws: WorkspaceContext, @Query() q: AuditQueryDto) {
    const window = requestWindow(q.from, q.to)!;
    return this.audit.list(ws.id, { window, action: q.action, userId: q.user_id, target: q.target, limit: q.limit, cursor: q.cursor });
  }

  /** The chained trail as NDJSON, streamed with the client's backpressure (docs/audit.md, "Export"). */
  @Get('export')
  @Streams(NDJSON, 'One line per row in seq order (the stored row plus `seq`, `prev_hash`, `chain_hash`), then `{"checkpoint": "<jws>"}` lines: the stored checkpoints of the range, then a fresh one of the last row')
  @Answers(422, '`from_seq must not exceed to_seq`', 'ValidationError')
  @Action('audit.read')
  async export(@Workspace() ws: WorkspaceContext, @Query() q: AuditExportQueryDto) {
    if (q.from_seq !== undefined && q.to_seq !== undefined && q.from_seq > q.to_seq) throw queryError('from_seq', 'from_seq must not exceed to_seq');
    const lines = Readable.from(await this.trail.exportLines(ws.id, { from: q.from_seq, to: q.to_seq }), { objectMode: false });
    // A failure once lines are sent destroys the connection (StreamableFile's default): a cut
    // export never looks complete.
    return new StreamableFile(lines, { type: NDJSON, disposition: `attachment; filename="audit-${ws.id}.ndjson"` });
  }
}
