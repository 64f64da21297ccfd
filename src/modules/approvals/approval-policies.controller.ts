import { Body, Controller, Get, HttpCode, Param, Post, Put } from '@nestjs/common';
import { Action } from 'src/common/access/decorators';
import { Workspace, WorkspaceContext } from 'src/common/access/context';
import { ApprovalPoliciesService } from 'src/modules/approvals/approval-policies.service';
import { ApprovalPolicyBody, DisableApprovalPolicyBody } from 'src/modules/approvals/dto/approval-policy.dto';

@Controller('api/v1/workspaces/:ws/approval-policies')
export class ApprovalPoliciesController {
  constructor(private readonly policies: ApprovalPoliciesService) {}

  @Get()
  @Action('workspace.read')
  list(@Workspace() ws: WorkspaceContext) {
    return this.policies.list(ws);
  }

  @Get(':policyId')
  @Action('workspace.read')
  get(@Workspace() ws: WorkspaceContext, @Param('policyId') policyId: string) {
    return this.policies.get(ws, policyId);
  }

  @Post()
  @HttpCode(200)
  @Action('approval.policy.manage')
  create(@Workspace() ws: WorkspaceContext, @Body() body: ApprovalPolicyBody) {
    return this.policies.create(ws, body);
  }

  @Put(':policyId')
  @Action('approval.policy.manage')
  revise(@Workspace() ws: WorkspaceContext, @Param('policyId') policyId: string, @Body() body: ApprovalPolicyBody) {
    return this.policies.revise(ws, policyId, body);
  }

  @Post(':policyId/disable')
  @HttpCode(200)
  @Action('approval.policy.manage')
  disable(@Workspace() ws: WorkspaceContext, @Param('policyId') policyId: string, @Body() body: DisableApprovalPolicyBody) {
    return this.policies.disable(ws, policyId, body.expected_revision);
  }
}
