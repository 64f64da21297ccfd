import { Body, Controller, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { Action } from 'src/platform/access/decorators';
import { Workspace, WorkspaceContext } from 'src/platform/access/context';
import { Answers, Returns } from 'src/common/http/documented';
import { PageQuery } from 'src/common/pagination/query';
import { PublishDto } from 'src/modules/workers/definitions/dto/workers.dto';
import { CreateWorkflowDto, PatchWorkflowDto } from 'src/modules/workers/definitions/dto/workflows.dto';
import { WorkflowsService } from 'src/modules/workers/definitions/workflows.service';
import {
  CREATED_SCHEMA,
  DIGEST_MISMATCH_SCHEMA,
  PATCHED_SCHEMA,
  WORKFLOW_ANSWER_SCHEMA,
  WORKFLOW_LIST_SCHEMA,
  WORKFLOW_PUBLISHED_SCHEMA,
  WORKFLOW_REVISIONS_SCHEMA,
} from 'src/modules/workers/definitions/definitions.responses';

@Controller('api/v1/workspaces/:ws/workflows')
export class WorkflowsController {
  constructor(private readonly workflows: WorkflowsService) {}

  @Post()
  @HttpCode(201)
  @Action('change.propose')
  @Returns(CREATED_SCHEMA)
  @Answers(409, '`workflow slug already exists`')
  @Answers(422, '`credential_detected` in `display_name` or `description`', 'ValidationError')
  create(@Workspace() ws: WorkspaceContext, @Body() body: CreateWorkflowDto) {
    return this.workflows.create(ws, body);
  }

  @Get()
  @Action('agentops.read')
  @Returns(WORKFLOW_LIST_SCHEMA)
  @Answers(422, '`invalid cursor`', 'ValidationError')
  list(@Workspace() ws: WorkspaceContext, @Query() q: PageQuery) {
    return this.workflows.list(ws, q);
  }

  @Get(':workflowId')
  @Action('agentops.read')
  @Returns(WORKFLOW_ANSWER_SCHEMA)
  @Answers(404, '`workflow not found`')
  get(@Workspace() ws: WorkspaceContext, @Param('workflowId') workflowId: string) {
    return this.workflows.get(ws, workflowId);
  }

  @Patch(':workflowId')
  @Action('change.propose')
  @Returns(PATCHED_SCHEMA)
  @Answers(404, '`workflow not found`')
  patch(@Workspace() ws: WorkspaceContext, @Param('workflowId') workflowId: string, @Body() body: PatchWorkflowDto) {
    return this.workflows.patch(ws, workflowId, body);
  }

  @Get(':workflowId/versions')
  @Action('agentops.read')
  @Returns(WORKFLOW_REVISIONS_SCHEMA)
  @Answers(404, '`workflow not found`')
  versions(@Workspace() ws: WorkspaceContext, @Param('workflowId') workflowId: string) {
    return this.workflows.versions(ws, workflowId);
  }

  @Post(':workflowId/versions')
  @HttpCode(201)
  @Action('change.apply')
  @Returns(WORKFLOW_PUBLISHED_SCHEMA)
  @Answers(404, '`workflow not found`; `revision not found`')
  @Answers(409, '`workflow_revision_already_published`; `published_revision_moved`')
  @Answers(409, 'Digest mismatch: `{detail: {revision_id, expected}}`, no `code`', DIGEST_MISMATCH_SCHEMA)
  @Answers(
    422,
    'The graph, at `["revision", "steps", ...]`: `a workflow revision needs at least one step`, `duplicate step_id`, ' +
      '`unknown or unpublished worker`, `unknown step reference`, `steps form a cycle`, `condition_invalid`',
    'ValidationError',
  )
  publish(@Workspace() ws: WorkspaceContext, @Param('workflowId') workflowId: string, @Body() body: PublishDto) {
    return this.workflows.publish(ws, workflowId, body);
  }
}
