import { Controller, Get, Param, Query } from '@nestjs/common';
import { Workspace, WorkspaceContext } from 'src/common/access/context';
import { Action } from 'src/common/access/decorators';
import { CapabilitiesService } from 'src/modules/routing/capabilities.service';
import { RouteDecisionsQuery } from 'src/modules/routing/dto/routing-query.dto';

@Controller('api/v1/workspaces/:ws')
export class CapabilitiesController {
  constructor(private readonly routing: CapabilitiesService) {}

  @Get('capabilities')
  @Action('workspace.read')
  capabilities(@Workspace() ws: WorkspaceContext) {
    return this.routing.capabilities(ws);
  }

  @Get('capabilities/:capabilityId/bindings')
  @Action('workspace.read')
  bindings(@Workspace() ws: WorkspaceContext, @Param('capabilityId') capabilityId: string) {
    return this.routing.bindings(ws, capabilityId);
  }

  @Get('route-decisions')
  @Action('workspace.read')
  decisions(@Workspace() ws: WorkspaceContext, @Query() query: RouteDecisionsQuery) {
    return this.routing.decisions(ws, query);
  }
}
