import { Body, Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import { Workspace, WorkspaceContext } from 'src/common/access/context';
import { Action } from 'src/common/access/decorators';
import { CreateModelProviderDto } from 'src/modules/model-providers/dto/model-provider.dto';
import { ModelProvidersService } from 'src/modules/model-providers/model-providers.service';

@Controller('api/v1/workspaces/:ws/model-providers')
export class ModelProvidersController {
  constructor(private readonly providers: ModelProvidersService) {}

  @Post()
  @HttpCode(200)
  @Action('connection.manage')
  create(@Workspace() ws: WorkspaceContext, @Body() body: CreateModelProviderDto) {
    return this.providers.create(ws, body);
  }

  @Get()
  @Action('workspace.read')
  list(@Workspace() ws: WorkspaceContext) {
    return this.providers.list(ws);
  }

  @Post(':connectionId/disable')
  @HttpCode(200)
  @Action('connection.manage')
  disable(@Workspace() ws: WorkspaceContext, @Param('connectionId') connectionId: string) {
    return this.providers.disable(ws, connectionId);
  }
}
