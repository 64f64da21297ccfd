import { Body, Controller, Get, HttpCode, Post, Put, UseFilters } from '@nestjs/common';
import { Action } from 'src/common/access/decorators';
import { Workspace, WorkspaceContext } from 'src/common/access/context';
import { Answers, Returns } from 'src/common/http/documented';
import { MAX_POLICY_BYTES, PublishPolicyDto, StoreDraftDto } from 'src/modules/policy/dto/policy.dto';
import { PolicyRejectedFilter } from 'src/modules/policy/policy-rejected.filter';
import { POLICY_PUBLISH_SCHEMA, POLICY_SCHEMA } from 'src/modules/policy/policy.responses';
import { PolicyService } from 'src/modules/policy/policy.service';

const STATE_UNAVAILABLE = '`workspace publication state is unavailable`';
const COMPILER_FAILED = '`policy_compiler_busy` (over the concurrency bound), `policy_compiler_unavailable`';

@Controller('api/v1/workspaces/:ws/policy')
export class PolicyController {
  constructor(private readonly policy: PolicyService) {}

  @Get()
  @Returns(POLICY_SCHEMA)
  @Answers(500, STATE_UNAVAILABLE)
  @Action('workspace.read')
  get(@Workspace() ws: WorkspaceContext) {
    return this.policy.get(ws);
  }

  @Put()
  @Returns(POLICY_SCHEMA)
  @Answers(422, `\`cedar_text must not be empty\`, \`cedar_text must be at most ${MAX_POLICY_BYTES} bytes\``, 'ValidationError')
  @Answers(500, STATE_UNAVAILABLE)
  @Action('policy.draft')
  storeDraft(@Workspace() ws: WorkspaceContext, @Body() body: StoreDraftDto) {
    return this.policy.storeDraft(ws, body.cedar_text);
  }

  @Post('test')
  @HttpCode(200)
  @Returns(POLICY_SCHEMA)
  @Answers(500, STATE_UNAVAILABLE)
  @Answers(503, COMPILER_FAILED)
  @Action('policy.draft')
  test(@Workspace() ws: WorkspaceContext) {
    return this.policy.test(ws);
  }

  @Post('publish')
  @HttpCode(200)
  @Returns(POLICY_PUBLISH_SCHEMA)
  @Answers(409, '`policy draft changed`, `policy revision changed`')
  @Answers(422, '`expected_draft_hash must be sha256: followed by 64 lowercase hex characters`', 'ValidationError')
  @Answers(422, 'The draft does not compile: the body is the policy document, `validation_state` `invalid`, with its diagnostics', POLICY_SCHEMA)
  @Answers(500, STATE_UNAVAILABLE)
  @Answers(503, COMPILER_FAILED)
  @Action('policy.publish')
  @UseFilters(PolicyRejectedFilter)
  publish(@Workspace() ws: WorkspaceContext, @Body() body: PublishPolicyDto) {
    return this.policy.publish(ws, body.expected_draft_hash, body.expected_revision_id ?? null);
  }
}
