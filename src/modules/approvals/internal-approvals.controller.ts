import { Body, HttpCode, Param, Post, Res } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { InternalRoutes } from 'src/platform/access/decorators';
import { ApprovalsService } from 'src/modules/approvals/approvals.service';
import { ExecutionReportBody, HeldCallBody } from 'src/modules/approvals/dto/approval.dto';
import { Answers, Returns } from 'src/common/http/documented';
import { GATEWAY_APPROVAL_SCHEMA } from 'src/modules/approvals/approvals.responses';

/** The gateway's side of approvals (CONTRACT.md 4.2): held calls and execution reports. */
@InternalRoutes('workspaces/:ws/approvals')
export class InternalApprovalsController {
  constructor(
    private readonly approvals: ApprovalsService,
    private readonly adapterHost: HttpAdapterHost,
  ) {}

  /** 201 for a new pending approval; 200 for a repeated `request_id` or a call denied at once. */
  @Post()
  @HttpCode(200)
  @Returns(GATEWAY_APPROVAL_SCHEMA)
  @Answers(201, 'A new pending approval', GATEWAY_APPROVAL_SCHEMA)
  @Answers(404, '`workspace not found`')
  @Answers(422, '`safe_summary must hold numeric context only (amount_usd)`', 'ValidationError')
  async hold(@Param('ws') ws: string, @Body() body: HeldCallBody, @Res({ passthrough: true }) res: unknown) {
    const { created, approval } = await this.approvals.hold(ws, body);
    if (created) this.adapterHost.httpAdapter.status(res, 201);
    return approval;
  }

  @Post(':approvalId/execution')
  @HttpCode(200)
  @Returns(GATEWAY_APPROVAL_SCHEMA)
  @Answers(404, '`approval not found`')
  @Answers(409, '`approval execution already reported` (a different report), `approval has expired`, `approval policy changed`, `approval is not approved`')
  execution(@Param('ws') ws: string, @Param('approvalId') approvalId: string, @Body() body: ExecutionReportBody) {
    return this.approvals.reportExecution(ws, approvalId, body);
  }
}
