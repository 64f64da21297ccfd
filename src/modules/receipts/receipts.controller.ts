import { Controller, Get, Param, Query, UseInterceptors } from '@nestjs/common';
import { Action } from 'src/common/access/decorators';
import { Workspace, WorkspaceContext } from 'src/common/access/context';
import { ReceiptQueryDto, ReceiptsQueryDto, RevisionsQueryDto } from 'src/modules/receipts/dto/receipts-query.dto';
import { ReceiptsService } from 'src/modules/receipts/receipts.service';
import { BigJsonInterceptor } from 'src/modules/streams/big-json';

@Controller('api/v1/workspaces/:ws/receipts')
@UseInterceptors(BigJsonInterceptor)
export class ReceiptsController {
  constructor(private readonly receipts: ReceiptsService) {}

  @Get()
  @Action('workspace.read')
  list(@Workspace() ws: WorkspaceContext, @Query() q: ReceiptsQueryDto) {
    return this.receipts.list(ws.id, q);
  }

  @Get(':receipt_id')
  @Action('workspace.read')
  get(@Workspace() ws: WorkspaceContext, @Param('receipt_id') receiptId: string, @Query() q: ReceiptQueryDto) {
    return this.receipts.get(ws.id, receiptId, q.revision);
  }

  @Get(':receipt_id/revisions')
  @Action('workspace.read')
  revisions(@Workspace() ws: WorkspaceContext, @Param('receipt_id') receiptId: string, @Query() q: RevisionsQueryDto) {
    return this.receipts.revisions(ws.id, receiptId, q);
  }
}
