import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { Action } from 'src/platform/access/decorators';
import { Workspace, WorkspaceContext } from 'src/platform/access/context';
import { Answers, Returns } from 'src/common/http/documented';
import { PageQuery } from 'src/common/pagination/query';
import { ControlLeaseDto, CreateSessionProfileDto, EstimateDto, ListRunsQuery, StartDemoRunDto, StartRunDto } from 'src/modules/workers/runs/dto/runs.dto';
import {
  ARTIFACT_ANSWER_SCHEMA,
  ESTIMATE_SCHEMA,
  REFUSAL_BODY_SCHEMA,
  RUN_ANSWER_SCHEMA,
  RUN_LIST_SCHEMA,
  SESSION_PROFILE_ANSWER_SCHEMA,
  SESSION_PROFILE_LIST_SCHEMA,
  SESSION_PROFILE_SCHEMA,
} from 'src/modules/workers/runs/runs.responses';
import { RunControlsService } from 'src/modules/workers/runs/run-controls.service';
import { RunsService } from 'src/modules/workers/runs/runs.service';
import { SessionProfilesService } from 'src/modules/workers/runs/session-profiles.service';

const HAND_OFF_REFUSED =
  'The orchestrator was not told (`orchestrator_not_configured`, `orchestrator_unreachable`, `orchestrator_refused`): a typed refusal';

@Controller('api/v1/workspaces/:ws')
export class RunsController {
  constructor(
    private readonly runs: RunsService,
    private readonly controls: RunControlsService,
    private readonly profiles: SessionProfilesService,
  ) {}

  @Post('run-estimates')
  @HttpCode(200)
  @Action('agentops.read')
  @Returns(ESTIMATE_SCHEMA)
  @Answers(404, '`worker not found`')
  @Answers(422, '`provide exactly one of worker_id or template_id`; `unknown template`', 'ValidationError')
  estimate(@Workspace() ws: WorkspaceContext, @Body() body: EstimateDto) {
    return this.runs.estimate(ws, body);
  }

  @Post('worker-runs')
  @HttpCode(201)
  @Action('change.propose')
  @Returns(RUN_ANSWER_SCHEMA)
  @Answers(402, 'Typed refusal: `environment_not_in_plan`, `run_allowance_exhausted`', REFUSAL_BODY_SCHEMA)
  @Answers(404, '`worker not found`')
  @Answers(
    409,
    'Typed refusal: `worker_not_published`, `environment_unavailable`, `concurrency_limit_reached`, `worker_concurrency_limit_reached`',
    REFUSAL_BODY_SCHEMA,
  )
  @Answers(422, '`unknown or revoked session profile`', 'ValidationError')
  @Answers(503, `${HAND_OFF_REFUSED}; the run is recorded \`failed\` and its id is in \`run_id\``, REFUSAL_BODY_SCHEMA)
  start(@Workspace() ws: WorkspaceContext, @Body() body: StartRunDto) {
    return this.runs.start(ws, body);
  }

  @Post('worker-demo-runs')
  @HttpCode(201)
  @Action('change.propose')
  @Returns(RUN_ANSWER_SCHEMA)
  @Answers(402, 'Typed refusal: `trial_exhausted`', REFUSAL_BODY_SCHEMA)
  @Answers(409, 'Typed refusal: `demo_not_supported`, `concurrency_limit_reached`', REFUSAL_BODY_SCHEMA)
  @Answers(422, '`unknown template`', 'ValidationError')
  @Answers(503, `${HAND_OFF_REFUSED}; the run is recorded \`failed\` and its id is in \`run_id\``, REFUSAL_BODY_SCHEMA)
  startDemo(@Workspace() ws: WorkspaceContext, @Body() body: StartDemoRunDto) {
    return this.runs.startDemo(ws, body);
  }

  @Get('worker-runs')
  @Action('agentops.read')
  @Returns(RUN_LIST_SCHEMA)
  @Answers(422, '`invalid cursor`', 'ValidationError')
  list(@Workspace() ws: WorkspaceContext, @Query() q: ListRunsQuery) {
    return this.runs.list(ws, q);
  }

  @Get('worker-runs/:runId')
  @Action('agentops.read')
  @Returns(RUN_ANSWER_SCHEMA)
  @Answers(404, '`run not found`')
  get(@Workspace() ws: WorkspaceContext, @Param('runId') runId: string) {
    return this.runs.get(ws, runId);
  }

  @Post('worker-runs/:runId/cancel')
  @HttpCode(200)
  @Action('change.propose')
  @Returns(RUN_ANSWER_SCHEMA)
  @Answers(404, '`run not found`')
  @Answers(409, '`run is not active`')
  @Answers(503, `${HAND_OFF_REFUSED}; the run is unchanged`, REFUSAL_BODY_SCHEMA)
  cancel(@Workspace() ws: WorkspaceContext, @Param('runId') runId: string) {
    return this.controls.cancel(ws, runId);
  }

  @Post('worker-runs/:runId/pause')
  @HttpCode(200)
  @Action('change.propose')
  @Returns(RUN_ANSWER_SCHEMA)
  @Answers(404, '`run not found`')
  @Answers(409, '`run is not running`')
  @Answers(503, `${HAND_OFF_REFUSED}; the run is unchanged`, REFUSAL_BODY_SCHEMA)
  pause(@Workspace() ws: WorkspaceContext, @Param('runId') runId: string) {
    return this.controls.pause(ws, runId);
  }

  @Post('worker-runs/:runId/resume')
  @HttpCode(200)
  @Action('change.propose')
  @Returns(RUN_ANSWER_SCHEMA)
  @Answers(404, '`run not found`')
  @Answers(409, '`run is not paused`')
  @Answers(503, `${HAND_OFF_REFUSED}; the run is unchanged`, REFUSAL_BODY_SCHEMA)
  resume(@Workspace() ws: WorkspaceContext, @Param('runId') runId: string) {
    return this.controls.resume(ws, runId);
  }

  @Post('worker-runs/:runId/control-lease')
  @HttpCode(200)
  @Action('change.apply')
  @Returns(RUN_ANSWER_SCHEMA)
  @Answers(404, '`run not found`')
  @Answers(409, '`run is not running or paused`; `control lease is held by another operator`')
  @Answers(503, `${HAND_OFF_REFUSED}; the run is unchanged`, REFUSAL_BODY_SCHEMA)
  controlLease(@Workspace() ws: WorkspaceContext, @Param('runId') runId: string, @Body() body: ControlLeaseDto) {
    return this.controls.controlLease(ws, runId, body);
  }

  @Get('worker-runs/:runId/artifacts/:artifactId')
  @Action('agentops.read')
  @Returns(ARTIFACT_ANSWER_SCHEMA)
  @Answers(404, '`run not found`; `artifact not found` (also once it expired)')
  artifact(@Workspace() ws: WorkspaceContext, @Param('runId') runId: string, @Param('artifactId') artifactId: string) {
    return this.runs.artifact(ws, runId, artifactId);
  }

  @Post('worker-session-profiles')
  @HttpCode(201)
  @Action('change.propose')
  @Returns(SESSION_PROFILE_SCHEMA)
  @Answers(409, '`session profile name already exists`')
  @Answers(422, '`credential_detected` in `name` or `description`', 'ValidationError')
  createProfile(@Workspace() ws: WorkspaceContext, @Body() body: CreateSessionProfileDto) {
    return this.profiles.create(ws, body);
  }

  @Get('worker-session-profiles')
  @Action('agentops.read')
  @Returns(SESSION_PROFILE_LIST_SCHEMA)
  @Answers(422, '`invalid cursor`', 'ValidationError')
  listProfiles(@Workspace() ws: WorkspaceContext, @Query() q: PageQuery) {
    return this.profiles.list(ws, q);
  }

  @Get('worker-session-profiles/:profileId')
  @Action('agentops.read')
  @Returns(SESSION_PROFILE_ANSWER_SCHEMA)
  @Answers(404, '`session profile not found`')
  getProfile(@Workspace() ws: WorkspaceContext, @Param('profileId') profileId: string) {
    return this.profiles.get(ws, profileId);
  }

  @Post('worker-session-profiles/:profileId/revoke')
  @HttpCode(200)
  @Action('change.propose')
  @Returns(SESSION_PROFILE_SCHEMA)
  @Answers(404, '`session profile not found`')
  revokeProfile(@Workspace() ws: WorkspaceContext, @Param('profileId') profileId: string) {
    return this.profiles.revoke(ws, profileId);
  }
}
