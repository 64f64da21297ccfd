import { Body, Controller, Get, HttpCode, Post, Put, Query, UseFilters } from '@nestjs/common';
import { Action } from 'src/platform/access/decorators';
import { Workspace, WorkspaceContext } from 'src/platform/access/context';
import { Answers, Returns } from 'src/common/http/documented';
import { ExplainPolicyDto, MAX_POLICY_BYTES, MAX_REPLAY_LIMIT, PolicyDiffQueryDto, PublishPolicyDto, ReplayPolicyDto, StoreDraftDto } from 'src/modules/policy/dto/policy.dto';
import { PolicyRejectedFilter } from 'src/modules/policy/policy-rejected.filter';
import { POLICY_DIFF_SCHEMA, POLICY_EXPLAIN_SCHEMA, POLICY_PUBLISH_SCHEMA, POLICY_REPLAY_SCHEMA, POLICY_SCHEMA } from 'src/modules/policy/policy.responses';
import { PolicyReplayService } from 'src/modules/policy/policy-replay.service';
import { PolicyExplainService } from 'src/modules/policy/policy-explain.service';
import { PolicyDiffService } from 'src/modules/policy/policy-diff.service';
import { PolicyService } from 'src/modules/policy/policy.service';

const STATE_UNAVAILABLE = '`workspace publication state is unavailable`';
const DRAFT_REJECTED = 'The draft does not compile: the body is the policy document, `validation_state` `invalid`, with its diagnostics';
const COMPILER_FAILED = '`policy_compiler_busy` (over the concurrency bound), `policy_compiler_unavailable`';

@Controller('api/v1/workspaces/:ws/policy')
export class PolicyController {
  constructor(
    private readonly policy: PolicyService,
    private readonly replays: PolicyReplayService,
    private readonly explains: PolicyExplainService,
    private readonly diffs: PolicyDiffService,
  ) {}

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
  @Answers(422, DRAFT_REJECTED, POLICY_SCHEMA)
  @Answers(500, STATE_UNAVAILABLE)
  @Answers(503, COMPILER_FAILED)
  @Action('policy.publish')
  @UseFilters(PolicyRejectedFilter)
  publish(@Workspace() ws: WorkspaceContext, @Body() body: PublishPolicyDto) {
    return this.policy.publish(ws, body.expected_draft_hash, body.expected_revision_id ?? null);
  }

  /** Replays the recorded decisions of a window against the draft (or `cedar_text`); writes nothing. */
  @Post('replay')
  @HttpCode(200)
  @Returns(POLICY_REPLAY_SCHEMA)
  @Answers(422, `\`invalid UTC window\`, \`from and to must be provided together\`, \`limit\` 1 to ${MAX_REPLAY_LIMIT}, \`cedar_text\` as PUT takes it`, 'ValidationError')
  @Answers(422, `${DRAFT_REJECTED} (the replayed source, \`cedar_text\` when given)`, POLICY_SCHEMA)
  @Answers(500, STATE_UNAVAILABLE)
  @Answers(503, COMPILER_FAILED)
  @Action('policy.draft')
  @UseFilters(PolicyRejectedFilter)
  replay(@Workspace() ws: WorkspaceContext, @Body() body: ReplayPolicyDto) {
    return this.replays.replay(ws, body);
  }

  /** One authorization request (spelled out or from a receipt) against the draft or the published revision; writes nothing. */
  @Post('explain')
  @HttpCode(200)
  @Returns(POLICY_EXPLAIN_SCHEMA)
  @Answers(404, '`receipt not found`')
  @Answers(422, '`provide either receipt_id or a request, not both`, `receipt carries no authorization request`, `the authorization request could not be evaluated`, a missing request field', 'ValidationError')
  @Answers(422, DRAFT_REJECTED, POLICY_SCHEMA)
  @Answers(500, STATE_UNAVAILABLE)
  @Answers(503, COMPILER_FAILED)
  @Action('policy.draft')
  @UseFilters(PolicyRejectedFilter)
  explain(@Workspace() ws: WorkspaceContext, @Body() body: ExplainPolicyDto) {
    return this.explains.explain(ws, body);
  }

  /** The policies added, removed and changed between two sources: a revision id, `draft` or `published`. */
  @Get('diff')
  @Returns(POLICY_DIFF_SCHEMA)
  @Answers(404, '`policy revision not found`')
  @Answers(500, STATE_UNAVAILABLE)
  @Action('workspace.read')
  diff(@Workspace() ws: WorkspaceContext, @Query() q: PolicyDiffQueryDto) {
    return this.diffs.diff(ws, q.from, q.to);
  }
}
