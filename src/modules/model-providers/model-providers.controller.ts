import { Body, Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import { Workspace, WorkspaceContext } from 'src/platform/access/context';
import { Action } from 'src/platform/access/decorators';
import { Answers, Returns } from 'src/common/http/documented';
import { CreateModelProviderDto } from 'src/modules/model-providers/dto/model-provider.dto';
import { MODEL_CONNECTION_ENVELOPE_SCHEMA, MODEL_CONNECTION_LIST_SCHEMA, MODEL_CONNECTION_SCHEMA } from 'src/modules/model-providers/model-providers.responses';
import { ModelProvidersService } from 'src/modules/model-providers/model-providers.service';

@Controller('api/v1/workspaces/:ws/model-providers')
export class ModelProvidersController {
  constructor(private readonly providers: ModelProvidersService) {}

  @Post()
  @HttpCode(200)
  @Returns(MODEL_CONNECTION_ENVELOPE_SCHEMA)
  @Answers(
    400,
    'An invalid `model_pattern`, `upstream_model` or `base_url` (e.g. `base_url is required for compat_custom`); `full live keys are refused; use a restricted key`',
  )
  @Answers(409, '`model pattern is already claimed by a connection`')
  @Answers(502, 'code `upstream_error`: the gateway could not seal the key; the connection stays pending', 'ServiceError')
  @Action('connection.manage')
  create(@Workspace() ws: WorkspaceContext, @Body() body: CreateModelProviderDto) {
    return this.providers.create(ws, body);
  }

  @Get()
  @Returns(MODEL_CONNECTION_LIST_SCHEMA)
  @Action('workspace.read')
  list(@Workspace() ws: WorkspaceContext) {
    return this.providers.list(ws);
  }

  @Post(':connectionId/disable')
  @HttpCode(200)
  @Returns(MODEL_CONNECTION_SCHEMA)
  @Answers(404, '`connection not found`')
  @Action('connection.manage')
  disable(@Workspace() ws: WorkspaceContext, @Param('connectionId') connectionId: string) {
    return this.providers.disable(ws, connectionId);
  }
}
