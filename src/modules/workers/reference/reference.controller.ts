import { Controller, Get, Query } from '@nestjs/common';
import { IsIn, IsOptional } from 'class-validator';
import { Action, Authenticated } from 'src/platform/access/decorators';
import { Workspace, WorkspaceContext } from 'src/platform/access/context';
import { Returns } from 'src/common/http/documented';
import { ReferenceService } from 'src/modules/workers/reference/reference.service';
import { TEMPLATE_CLASSES } from 'src/modules/workers/workers.data';
import { DOCTOR_SCHEMA, ENTITLEMENTS_SCHEMA, ENVIRONMENTS_SCHEMA, MODES_SCHEMA, PRESETS_SCHEMA, TEMPLATES_SCHEMA } from 'src/modules/workers/reference/reference.responses';

class TemplatesQuery {
  @IsOptional() @IsIn(TEMPLATE_CLASSES) category?: string;
}

@Controller('api/v1')
export class ReferenceController {
  constructor(private readonly reference: ReferenceService) {}

  @Get('worker-templates')
  @Authenticated()
  @Returns(TEMPLATES_SCHEMA)
  templates(@Query() q: TemplatesQuery) {
    return this.reference.templates(q.category);
  }

  @Get('workspaces/:ws/worker-environments')
  @Action('agentops.read')
  @Returns(ENVIRONMENTS_SCHEMA)
  environments(@Workspace() ws: WorkspaceContext) {
    return this.reference.environments(ws);
  }

  @Get('workspaces/:ws/workers-entitlements')
  @Action('agentops.read')
  @Returns(ENTITLEMENTS_SCHEMA)
  entitlements(@Workspace() ws: WorkspaceContext) {
    return this.reference.entitlementsDocument(ws);
  }

  @Get('workspaces/:ws/permission-presets')
  @Action('agentops.read')
  @Returns(PRESETS_SCHEMA)
  presets(@Workspace() ws: WorkspaceContext) {
    return this.reference.permissionPresets(ws);
  }

  @Get('workspaces/:ws/execution-modes')
  @Action('agentops.read')
  @Returns(MODES_SCHEMA)
  modes(@Workspace() ws: WorkspaceContext) {
    return this.reference.executionModes(ws);
  }

  @Get('workspaces/:ws/workers-doctor')
  @Action('agentops.read')
  @Returns(DOCTOR_SCHEMA)
  doctor(@Workspace() ws: WorkspaceContext) {
    return this.reference.doctor(ws);
  }
}
