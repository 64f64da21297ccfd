import { Body, Controller, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { Action } from 'src/common/access/decorators';
import { Workspace, WorkspaceContext } from 'src/common/access/context';
import { PageQuery } from 'src/common/pagination/query';
import { PublishDto } from 'src/modules/workers/dto/workers.dto';
import { CreateWorkflowDto, PatchWorkflowDto } from 'src/modules/workers/dto/workflows.dto';
import { WorkflowsService } from 'src/modules/workers/workflows.service';

@Controller('api/v1/workspaces/:ws/workflows')
export class WorkflowsController {
  constructor(private readonly workflows: WorkflowsService) {}

  @Post()
  @HttpCode(201)
  @Action('change.propose')
  create(@Workspace() ws: WorkspaceContext, @Body() body: CreateWorkflowDto) {
    return this.workflows.create(ws, body);
  }

  @Get()
  @Action('agentops.read')
  list(@Workspace() ws: WorkspaceContext, @Query() q: PageQuery) {
    return this.workflows.list(ws, q);
  }

  @Get(':workflowId')
  @Action('agentops.read')
  get(@Workspace() ws: WorkspaceContext, @Param('workflowId') workflowId: string) {
    return this.workflows.get(ws, workflowId);
  }

  @Patch(':workflowId')
  @Action('change.propose')
  patch(@Workspace() ws: WorkspaceContext, @Param('workflowId') workflowId: string, @Body() body: PatchWorkflowDto) {
    return this.workflows.patch(ws, workflowId, body);
  }

  @Get(':workflowId/versions')
  @Action('agentops.read')
  versions(@Workspace() ws: WorkspaceContext, @Param('workflowId') workflowId: string) {
    return this.workflows.versions(ws, workflowId);
  }

  @Post(':workflowId/versions')
  @HttpCode(201)
  @Action('change.apply')
  publish(@Workspace() ws: WorkspaceContext, @Param('workflowId') workflowId: string, @Body() body: PublishDto) {
    return this.workflows.publish(ws, workflowId, body);
  }
}
