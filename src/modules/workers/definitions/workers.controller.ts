import { Body, Controller, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { Action } from 'src/platform/access/decorators';
import { Workspace, WorkspaceContext } from 'src/platform/access/context';
import { Answers, Returns } from 'src/common/http/documented';
import { DraftsService } from 'src/modules/workers/definitions/drafts.service';
import { CreateWorkerDto, DraftWorkerDto, ListWorkersQuery, PatchWorkerDto, PublishDto } from 'src/modules/workers/definitions/dto/workers.dto';
import { WorkersService } from 'src/modules/workers/definitions/workers.service';
import {
  ASSISTANT_DENIED_SCHEMA,
  CREATED_SCHEMA,
  DIGEST_MISMATCH_SCHEMA,
  DRAFT_SCHEMA,
  PATCHED_SCHEMA,
  REVISIONS_SCHEMA,
  WORKER_ANSWER_SCHEMA,
  WORKER_LIST_SCHEMA,
  WORKER_PUBLISHED_SCHEMA,
} from 'src/modules/workers/definitions/definitions.responses';

@Controller('api/v1/workspaces/:ws')
export class WorkersController {
  constructor(
    private readonly workers: WorkersService,
    private readonly drafts: DraftsService,
  ) {}

  @Post('worker-drafts')
  @HttpCode(200)
  @Action('change.propose')
  @Returns(DRAFT_SCHEMA)
  @Answers(409, 'The workspace assistant is not enabled: `{detail: {code: "denied", message, href}}`', ASSISTANT_DENIED_SCHEMA)
  @Answers(422, '`unknown template`; `credential_detected` for a job description carrying credential material', 'ValidationError')
  draft(@Workspace() ws: WorkspaceContext, @Body() body: DraftWorkerDto) {
    return this.drafts.draft(ws, body);
  }

  @Post('workers')
  @HttpCode(201)
  @Action('change.propose')
  @Returns(CREATED_SCHEMA)
  @Answers(409, '`worker slug already exists`')
  @Answers(
    422,
    '`unknown template`; `agent_passport_id must be the agent_id of an active virtual key of this workspace`; ' +
      '`credential_detected` in `display_name`, `description` or `instructions`',
    'ValidationError',
  )
  create(@Workspace() ws: WorkspaceContext, @Body() body: CreateWorkerDto) {
    return this.workers.create(ws, body);
  }

  @Get('workers')
  @Action('agentops.read')
  @Returns(WORKER_LIST_SCHEMA)
  @Answers(422, '`invalid cursor`', 'ValidationError')
  list(@Workspace() ws: WorkspaceContext, @Query() q: ListWorkersQuery) {
    return this.workers.list(ws, q);
  }

  @Get('workers/:workerId')
  @Action('agentops.read')
  @Returns(WORKER_ANSWER_SCHEMA)
  @Answers(404, '`worker not found`')
  get(@Workspace() ws: WorkspaceContext, @Param('workerId') workerId: string) {
    return this.workers.get(ws, workerId);
  }

  @Patch('workers/:workerId')
  @Action('change.propose')
  @Returns(PATCHED_SCHEMA)
  @Answers(404, '`worker not found`')
  @Answers(409, '`worker is retired`')
  @Answers(
    422,
    '`a worker needs at least one environment class`; `unknown or revoked session profile`; `credential_detected` in `body.instructions`',
    'ValidationError',
  )
  patch(@Workspace() ws: WorkspaceContext, @Param('workerId') workerId: string, @Body() body: PatchWorkerDto) {
    return this.workers.patch(ws, workerId, body);
  }

  @Get('workers/:workerId/versions')
  @Action('agentops.read')
  @Returns(REVISIONS_SCHEMA)
  @Answers(404, '`worker not found`')
  versions(@Workspace() ws: WorkspaceContext, @Param('workerId') workerId: string) {
    return this.workers.versions(ws, workerId);
  }

  @Post('workers/:workerId/versions')
  @HttpCode(201)
  @Action('change.apply')
  @Returns(WORKER_PUBLISHED_SCHEMA)
  @Answers(404, '`worker not found`; `revision not found`')
  @Answers(409, '`worker_revision_already_published`; `published_revision_moved`')
  @Answers(409, 'Digest mismatch: `{detail: {revision_id, expected}}`, no `code`', DIGEST_MISMATCH_SCHEMA)
  publish(@Workspace() ws: WorkspaceContext, @Param('workerId') workerId: string, @Body() body: PublishDto) {
    return this.workers.publish(ws, workerId, body);
  }
}
