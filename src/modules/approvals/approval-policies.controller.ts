import { Body, Controller, Get, HttpCode, Param, Post, Put } from '@nestjs/common';
import { Action } from 'src/platform/access/decorators';
import { Workspace, WorkspaceContext } from 'src/platform/access/context';
import { Answers, Returns } from 'src/common/http/documented';
import { ApprovalPoliciesService } from 'src/modules/approvals/approval-policies.service';
import { APPROVAL_POLICY_LIST_SCHEMA, APPROVAL_POLICY_SCHEMA } from 'src/modules/approvals/approvals.responses';
import { ApprovalPolicyBody, DisableApprovalPolicyBody } from 'src/modules/approvals/dto/approval-policy.dto';
import { RULE_MESSAGES } from 'src/modules/approvals/rules';

const NOT_FOUND = '`approval policy not found`';
/** The rule-validation messages; `approver principals are invalid` also names an approver who is not a member. */
const RULE_FAILURES = Object.values(RULE_MESSAGES)
  .map((m) => `\`${m}\``)
  .join(', ');

@Controller('api/v1/workspaces/:ws/approval-policies')
export class ApprovalPoliciesController {
  constructor(private readonly policies: ApprovalPoliciesService) {}

  @Get()
  @Returns(APPROVAL_POLICY_LIST_SCHEMA)
  @Action('workspace.read')
  list(@Workspace() ws: WorkspaceContext) {
    return this.policies.list(ws);
  }

  @Get(':policyId')
  @Returns(APPROVAL_POLICY_SCHEMA)
  @Answers(404, NOT_FOUND)
  @Action('workspace.read')
  get(@Workspace() ws: WorkspaceContext, @Param('policyId') policyId: string) {
    return this.policies.get(ws, policyId);
  }

  @Post()
  @HttpCode(200)
  @Returns(APPROVAL_POLICY_SCHEMA)
  @Answers(409, '`approval policy name already exists`')
  @Answers(422, `\`expected_revision is only valid when updating\`, \`name must not be blank\`, ${RULE_FAILURES}`, 'ValidationError')
  @Action('approval.policy.manage')
  create(@Workspace() ws: WorkspaceContext, @Body() body: ApprovalPolicyBody) {
    return this.policies.create(ws, body);
  }

  @Put(':policyId')
  @Returns(APPROVAL_POLICY_SCHEMA)
  @Answers(404, NOT_FOUND)
  @Answers(409, '`approval policy revision changed`, `approval policy is disabled`, `approval policy name already exists`')
  @Answers(422, `\`expected_revision is required\`, \`expected_revision must be an integer greater than or equal to 1\`, \`name must not be blank\`, ${RULE_FAILURES}`, 'ValidationError')
  @Action('approval.policy.manage')
  revise(@Workspace() ws: WorkspaceContext, @Param('policyId') policyId: string, @Body() body: ApprovalPolicyBody) {
    return this.policies.revise(ws, policyId, body);
  }

  @Post(':policyId/disable')
  @HttpCode(200)
  @Returns(APPROVAL_POLICY_SCHEMA)
  @Answers(404, NOT_FOUND)
  @Answers(409, '`approval policy revision changed`')
  @Answers(422, '`expected_revision is required`, `expected_revision must be an integer greater than or equal to 1`', 'ValidationError')
  @Action('approval.policy.manage')
  disable(@Workspace() ws: WorkspaceContext, @Param('policyId') policyId: string, @Body() body: DisableApprovalPolicyBody) {
    return this.policies.disable(ws, policyId, body.expected_revision);
  }
}
