import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { Action } from 'src/common/access/decorators';
import { Workspace, WorkspaceContext } from 'src/common/access/context';
import { ApprovalsService } from 'src/modules/approvals/approvals.service';
import { ListApprovalsQuery, VoteBody } from 'src/modules/approvals/dto/approval.dto';

@Controller('api/v1/workspaces/:ws/approvals')
export class ApprovalsController {
  constructor(private readonly approvals: ApprovalsService) {}

  @Get()
  @Action('workspace.read')
  list(@Workspace() ws: WorkspaceContext, @Query() q: ListApprovalsQuery) {
    return this.approvals.list(ws, q);
  }

  @Get(':approvalId')
  @Action('workspace.read')
  get(@Workspace() ws: WorkspaceContext, @Param('approvalId') approvalId: string) {
    return this.approvals.get(ws, approvalId);
  }

  @Post(':approvalId/votes')
  @HttpCode(200)
  @Action('approval.decide')
  vote(@Workspace() ws: WorkspaceContext, @Param('approvalId') approvalId: string, @Body() body: VoteBody) {
    return this.approvals.vote(ws, approvalId, body);
  }
}
