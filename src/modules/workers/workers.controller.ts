import { Body, Controller, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { Action } from 'src/common/access/decorators';
import { Workspace, WorkspaceContext } from 'src/common/access/context';
import { DraftsService } from 'src/modules/workers/drafts.service';
import { CreateWorkerDto, DraftWorkerDto, ListWorkersQuery, PatchWorkerDto, PublishDto } from 'src/modules/workers/dto/workers.dto';
import { WorkersService } from 'src/modules/workers/workers.service';

@Controller('api/v1/workspaces/:ws')
export class WorkersController {
  constructor(
    private readonly workers: WorkersService,
    private readonly drafts: DraftsService,
  ) {}

  @Post('worker-drafts')
  @HttpCode(200)
  @Action('change.propose')
  draft(@Workspace() ws: WorkspaceContext, @Body() body: DraftWorkerDto) {
    return this.drafts.draft(ws, body);
  }

  @Post('workers')
  @HttpCode(201)
  @Action('change.propose')
  create(@Workspace() ws: WorkspaceContext, @Body() body: CreateWorkerDto) {
    return this.workers.create(ws, body);
  }

  @Get('workers')
  @Action('agentops.read')
  list(@Workspace() ws: WorkspaceContext, @Query() q: ListWorkersQuery) {
    return this.workers.list(ws, q);
  }

  @Get('workers/:workerId')
  @Action('agentops.read')
  get(@Workspace() ws: WorkspaceContext, @Param('workerId') workerId: string) {
    return this.workers.get(ws, workerId);
  }

  @Patch('workers/:workerId')
  @Action('change.propose')
  patch(@Workspace() ws: WorkspaceContext, @Param('workerId') workerId: string, @Body() body: PatchWorkerDto) {
    return this.workers.patch(ws, workerId, body);
  }

  @Get('workers/:workerId/versions')
  @Action('agentops.read')
  versions(@Workspace() ws: WorkspaceContext, @Param('workerId') workerId: string) {
    return this.workers.versions(ws, workerId);
  }

  @Post('workers/:workerId/versions')
  @HttpCode(201)
  @Action('change.apply')
  publish(@Workspace() ws: WorkspaceContext, @Param('workerId') workerId: string, @Body() body: PublishDto) {
    return this.workers.publish(ws, workerId, body);
  }
}
