import { Body, Controller, Get, HttpCode, Post, Put, UseFilters } from '@nestjs/common';
import { Action } from 'src/common/access/decorators';
import { Workspace, WorkspaceContext } from 'src/common/access/context';
import { PublishPolicyDto, StoreDraftDto } from 'src/modules/policy/dto/policy.dto';
import { PolicyRejectedFilter } from 'src/modules/policy/policy-rejected.filter';
import { PolicyService } from 'src/modules/policy/policy.service';

@Controller('api/v1/workspaces/:ws/policy')
export class PolicyController {
  constructor(private readonly policy: PolicyService) {}

  @Get()
  @Action('workspace.read')
  get(@Workspace() ws: WorkspaceContext) {
    return this.policy.get(ws);
  }

  @Put()
  @Action('policy.draft')
  storeDraft(@Workspace() ws: WorkspaceContext, @Body() body: StoreDraftDto) {
    return this.policy.storeDraft(ws, body.cedar_text);
  }

  @Post('test')
  @HttpCode(200)
  @Action('policy.draft')
  test(@Workspace() ws: WorkspaceContext) {
    return this.policy.test(ws);
  }

  @Post('publish')
  @HttpCode(200)
  @Action('policy.publish')
  @UseFilters(PolicyRejectedFilter)
  publish(@Workspace() ws: WorkspaceContext, @Body() body: PublishPolicyDto) {
    return this.policy.publish(ws, body.expected_draft_hash, body.expected_revision_id ?? null);
  }
}
