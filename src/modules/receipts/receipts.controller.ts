import { Controller, Get, Param, Query, UseInterceptors } from '@nestjs/common';
import { Action } from 'src/platform/access/decorators';
import { Workspace, WorkspaceContext } from 'src/platform/access/context';
import { Answers, Returns } from 'src/common/http/documented';
import { ReceiptQueryDto, ReceiptsQueryDto, RevisionsQueryDto } from 'src/modules/receipts/dto/receipts-query.dto';
import { RECEIPT_DETAIL_SCHEMA, RECEIPT_LIST_SCHEMA, RECEIPT_REVISIONS_SCHEMA } from 'src/modules/receipts/receipts.responses';
import { ReceiptsService } from 'src/modules/receipts/receipts.service';
import { BigJsonInterceptor } from 'src/modules/streams/big-json';

@Controller('api/v1/workspaces/:ws/receipts')
@UseInterceptors(BigJsonInterceptor)
export class ReceiptsController {
  constructor(private readonly receipts: ReceiptsService) {}

  @Get()
  @Returns(RECEIPT_LIST_SCHEMA)
  @Answers(400, '`unknown invocation state`, `unknown evidence trust class`, `unknown verification state`, `invalid receipt cursor` (also `cursor` with `before`)')
  @Answers(422, '`unknown authorization decision`, `from and to must be provided together`, `invalid UTC window`', 'ValidationError')
  @Action('workspace.read')
  list(@Workspace() ws: WorkspaceContext, @Query() q: ReceiptsQueryDto) {
    return this.receipts.list(ws.id, q);
  }

  @Get(':receipt_id')
  @Returns(RECEIPT_DETAIL_SCHEMA)
  @Answers(404, '`receipt not found` (also for a `revision` that does not exist)')
  @Action('workspace.read')
  get(@Workspace() ws: WorkspaceContext, @Param('receipt_id') receiptId: string, @Query() q: ReceiptQueryDto) {
    return this.receipts.get(ws.id, receiptId, q.revision);
  }

  @Get(':receipt_id/revisions')
  @Returns(RECEIPT_REVISIONS_SCHEMA)
  @Answers(404, '`receipt not found`')
  @Action('workspace.read')
  revisions(@Workspace() ws: WorkspaceContext, @Param('receipt_id') receiptId: string, @Query() q: RevisionsQueryDto) {
    return this.receipts.revisions(ws.id, receiptId, q);
  }
}
