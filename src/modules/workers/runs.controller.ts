import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { Action } from 'src/common/access/decorators';
import { Workspace, WorkspaceContext } from 'src/common/access/context';
import { PageQuery } from 'src/common/pagination/query';
import { ControlLeaseDto, CreateSessionProfileDto, EstimateDto, ListRunsQuery, StartDemoRunDto, StartRunDto } from 'src/modules/workers/dto/runs.dto';
import { RunsService } from 'src/modules/workers/runs.service';
import { SessionProfilesService } from 'src/modules/workers/session-profiles.service';

@Controller('api/v1/workspaces/:ws')
export class RunsController {
  constructor(
    private readonly runs: RunsService,
    private readonly profiles: SessionProfilesService,
  ) {}

  @Post('run-estimates')
  @HttpCode(200)
  @Action('agentops.read')
  estimate(@Workspace() ws: WorkspaceContext, @Body() body: EstimateDto) {
    return this.runs.estimate(ws, body);
  }

  @Post('worker-runs')
  @HttpCode(201)
  @Action('change.propose')
  start(@Workspace() ws: WorkspaceContext, @Body() body: StartRunDto) {
    return this.runs.start(ws, body);
  }

  @Post('worker-demo-runs')
  @HttpCode(201)
  @Action('change.propose')
  startDemo(@Workspace() ws: WorkspaceContext, @Body() body: StartDemoRunDto) {
    return this.runs.startDemo(ws, body);
  }

  @Get('worker-runs')
  @Action('agentops.read')
  list(@Workspace() ws: WorkspaceContext, @Query() q: ListRunsQuery) {
    return this.runs.list(ws, q);
  }

  @Get('worker-runs/:runId')
  @Action('agentops.read')
  get(@Workspace() ws: WorkspaceContext, @Param('runId') runId: string) {
    return this.runs.get(ws, runId);
  }

  @Post('worker-runs/:runId/cancel')
  @HttpCode(200)
  @Action('change.propose')
  cancel(@Workspace() ws: WorkspaceContext, @Param('runId') runId: string) {
    return this.runs.cancel(ws, runId);
  }

  @Post('worker-runs/:runId/pause')
  @HttpCode(200)
  @Action('change.propose')
  pause(@Workspace() ws: WorkspaceContext, @Param('runId') runId: string) {
    return this.runs.pause(ws, runId);
  }

  @Post('worker-runs/:runId/resume')
  @HttpCode(200)
  @Action('change.propose')
  resume(@Workspace() ws: WorkspaceContext, @Param('runId') runId: string) {
    return this.runs.resume(ws, runId);
  }

  @Post('worker-runs/:runId/control-lease')
  @HttpCode(200)
  @Action('change.apply')
  controlLease(@Workspace() ws: WorkspaceContext, @Param('runId') runId: string, @Body() body: ControlLeaseDto) {
    return this.runs.controlLease(ws, runId, body);
  }

  @Get('worker-runs/:runId/artifacts/:artifactId')
  @Action('agentops.read')
  artifact(@Workspace() ws: WorkspaceContext, @Param('runId') runId: string, @Param('artifactId') artifactId: string) {
    return this.runs.artifact(ws, runId, artifactId);
  }

  @Post('worker-session-profiles')
  @HttpCode(201)
  @Action('change.propose')
  createProfile(@Workspace() ws: WorkspaceContext, @Body() body: CreateSessionProfileDto) {
    return this.profiles.create(ws, body);
  }

  @Get('worker-session-profiles')
  @Action('agentops.read')
  listProfiles(@Workspace() ws: WorkspaceContext, @Query() q: PageQuery) {
    return this.profiles.list(ws, q);
  }

  @Get('worker-session-profiles/:profileId')
  @Action('agentops.read')
  getProfile(@Workspace() ws: WorkspaceContext, @Param('profileId') profileId: string) {
    return this.profiles.get(ws, profileId);
  }

  @Post('worker-session-profiles/:profileId/revoke')
  @HttpCode(200)
  @Action('change.propose')
  revokeProfile(@Workspace() ws: WorkspaceContext, @Param('profileId') profileId: string) {
    return this.profiles.revoke(ws, profileId);
  }
}
