import { Controller, Get, Param, Query } from '@nestjs/common';
import { Workspace, WorkspaceContext } from 'src/platform/access/context';
import { Action } from 'src/platform/access/decorators';
import { Answers, Returns } from 'src/common/http/documented';
import { CapabilitiesService } from 'src/modules/routing/capabilities.service';
import { RouteDecisionsQuery } from 'src/modules/routing/dto/routing-query.dto';
import { BINDINGS_SCHEMA, CAPABILITY_LIST_SCHEMA, ROUTE_DECISIONS_SCHEMA } from 'src/modules/routing/routing.responses';

@Controller('api/v1/workspaces/:ws')
export class CapabilitiesController {
  constructor(private readonly routing: CapabilitiesService) {}

  @Get('capabilities')
  @Returns(CAPABILITY_LIST_SCHEMA)
  @Action('workspace.read')
  capabilities(@Workspace() ws: WorkspaceContext) {
    return this.routing.capabilities(ws);
  }

  @Get('capabilities/:capabilityId/bindings')
  @Returns(BINDINGS_SCHEMA)
  @Answers(400, '`capability_id must use the cap prefix`')
  @Answers(404, '`capability not found`')
  @Action('workspace.read')
  bindings(@Workspace() ws: WorkspaceContext, @Param('capabilityId') capabilityId: string) {
    return this.routing.bindings(ws, capabilityId);
  }

  @Get('route-decisions')
  @Returns(ROUTE_DECISIONS_SCHEMA)
  @Answers(400, '`invalid receipt cursor`, `capability_id must use the cap prefix`')
  @Action('workspace.read')
  decisions(@Workspace() ws: WorkspaceContext, @Query() query: RouteDecisionsQuery) {
    return this.routing.decisions(ws, query);
  }
}
