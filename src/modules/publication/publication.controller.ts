import { Controller, Get, Param, Query } from '@nestjs/common';
import { Action } from 'src/platform/access/decorators';
import { Workspace, WorkspaceContext } from 'src/platform/access/context';
import { Answers, Returns } from 'src/common/http/documented';
import { ApiError } from 'src/common/http/errors';
import { PageQuery } from 'src/common/pagination/query';
import { SnapshotDiffQuery, VERSION_MAX } from 'src/modules/publication/dto/publication.dto';
import { ROLLOUT_SCHEMA, VERSION_DIFF_SCHEMA, VERSION_LIST_SCHEMA } from 'src/modules/publication/publication.responses';
import { SnapshotHistoryService } from 'src/modules/publication/snapshot-history.service';

const VERSION_PARAM = /^[1-9][0-9]{0,9}$/;

/** Which snapshot is published, which gateway instance runs which, and the kept versions (docs/rollout.md). */
@Controller('api/v1/workspaces/:ws/publication')
export class PublicationController {
  constructor(private readonly history: SnapshotHistoryService) {}

  @Get()
  @Returns(ROLLOUT_SCHEMA)
  @Action('workspace.read')
  rollout(@Workspace() ws: WorkspaceContext) {
    return this.history.rollout(ws.id);
  }

  @Get('versions')
  @Returns(VERSION_LIST_SCHEMA)
  @Answers(422, '`invalid cursor`', 'ValidationError')
  @Action('workspace.read')
  versions(@Workspace() ws: WorkspaceContext, @Query() q: PageQuery) {
    return this.history.versions(ws.id, { limit: q.limit, cursor: q.cursor });
  }

  /** The kept document of a version, each sealed envelope shown as `sealed:sha256:<hex>` of it. */
  @Get('versions/:version')
  @Returns({ type: 'object', description: 'The snapshot document (snapshot.schema.json) with every `envelope` replaced by `sealed:sha256:<hex>`' })
  @Answers(404, '`snapshot version not found`')
  @Action('workspace.read')
  version(@Workspace() ws: WorkspaceContext, @Param('version') version: string) {
    if (!VERSION_PARAM.test(version) || Number(version) > VERSION_MAX) throw new ApiError(404, 'snapshot version not found');
    return this.history.version(ws.id, Number(version));
  }

  @Get('diff')
  @Returns(VERSION_DIFF_SCHEMA)
  @Answers(404, '`snapshot version not found`')
  @Action('workspace.read')
  diff(@Workspace() ws: WorkspaceContext, @Query() q: SnapshotDiffQuery) {
    return this.history.diff(ws.id, q.from, q.to);
  }
}
