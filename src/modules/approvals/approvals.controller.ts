import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { Action } from 'src/platform/access/decorators';
import { Workspace, WorkspaceContext } from 'src/platform/access/context';
import { Answers, Returns } from 'src/common/http/documented';
import { APPROVAL_LIST_SCHEMA, APPROVAL_SCHEMA } from 'src/modules/approvals/approvals.responses';
import { ApprovalsService } from 'src/modules/approvals/approvals.service';
import { ListApprovalsQuery, VoteBody } from 'src/modules/approvals/dto/approval.dto';

@Controller('api/v1/workspaces/:ws/approvals')
export class ApprovalsController {
  constructor(private readonly approvals: ApprovalsService) {}

  @Get()
  @Returns(APPROVAL_LIST_SCHEMA)
  @Answers(422, '`invalid cursor`', 'ValidationError')
  @Action('workspace.read')
  list(@Workspace() ws: WorkspaceContext, @Query() q: ListApprovalsQuery) {
    return this.approvals.list(ws, q);
  }

  @Get(':approvalId')
  @Returns(APPROVAL_SCHEMA)
  @Answers(404, '`approval not found`')
  @Action('workspace.read')
  get(@Workspace() ws: WorkspaceContext, @Param('approvalId') approvalId: string) {
    return this.approvals.get(ws, approvalId);
  }

  @Post(':approvalId/votes')
  @HttpCode(200)
  @Returns(APPROVAL_SCHEMA)
  @Answers(403, '`operator is not an eligible approver`')
  @Answers(404, '`approval not found`')
  @Answers(409, '`approval revision changed`, `approval is not pending`, `approval has expired`, `approval policy changed`, `operator already voted`')
  @Answers(422, '`review reason must not be blank`', 'ValidationError')
  @Action('approval.decide')
  vote(@Workspace() ws: WorkspaceContext, @Param('approvalId') approvalId: string, @Body() body: VoteBody) {
    return this.approvals.vote(ws, approvalId, body);
  }
}
