import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { Workspace, WorkspaceContext } from 'src/platform/access/context';
import { Action } from 'src/platform/access/decorators';
import { Answers, Returns } from 'src/common/http/documented';
import { DeleteQualifierQuery, UpsertQualifierDto } from 'src/modules/routing/dto/qualifier.dto';
import { QualifiersService } from 'src/modules/routing/qualifiers.service';
import { QUALIFIER_LIST_SCHEMA, QUALIFIER_SCHEMA, QUALIFIER_TOMBSTONE_SCHEMA } from 'src/modules/routing/routing.responses';

const BAD_ID = '`qualifier_id must be [a-z0-9_-]`';
const STALE = '`route_qualifier_revision_conflict`';

@Controller('api/v1/workspaces/:ws/route-qualifiers')
export class QualifiersController {
  constructor(private readonly qualifiers: QualifiersService) {}

  @Get()
  @Returns(QUALIFIER_LIST_SCHEMA)
  @Answers(500, '`workspace publication state is unavailable`')
  @Answers(500, 'code `route_qualifier_payload_invalid` (with the `qualifier_id` when a safe slug): a stored qualifier cannot be read back', 'ServiceError')
  @Action('workspace.read')
  list(@Workspace() ws: WorkspaceContext) {
    return this.qualifiers.list(ws);
  }

  @Post()
  @HttpCode(200)
  @Returns(QUALIFIER_SCHEMA)
  @Answers(400, BAD_ID + ', `capability_id must use the cap prefix`')
  @Answers(409, STALE + ' (mismatch, or a create over an existing qualifier), `route_qualifier_limit_reached`')
  @Answers(422, 'Constraint field errors; `capability_id` over 256 characters', 'ValidationError')
  @Action('routing.publish')
  upsert(@Workspace() ws: WorkspaceContext, @Body() body: UpsertQualifierDto) {
    return this.qualifiers.upsert(ws, body);
  }

  @Delete(':qualifierId')
  @Returns(QUALIFIER_TOMBSTONE_SCHEMA)
  @Answers(400, BAD_ID)
  @Answers(404, '`qualifier not found`')
  @Answers(409, STALE)
  @Action('routing.publish')
  remove(@Workspace() ws: WorkspaceContext, @Param('qualifierId') qualifierId: string, @Query() query: DeleteQualifierQuery) {
    return this.qualifiers.remove(ws, qualifierId, query.expected_revision);
  }
}
