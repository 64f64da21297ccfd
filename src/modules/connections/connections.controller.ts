import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query, Redirect } from '@nestjs/common';
import { Action, Public } from 'src/common/access/decorators';
import { Workspace, WorkspaceContext } from 'src/common/access/context';
import { ConnectionsService } from 'src/modules/connections/connections.service';
import { CatalogProviderDto, FederatedCompleteDto, ReconnectDto, RestrictedKeyDto, StartConnectionDto } from 'src/modules/connections/dto/connection.dto';
import { OAuthService } from 'src/modules/connections/oauth.service';

@Controller('api/v1/workspaces/:ws')
export class ConnectionsController {
  constructor(private readonly connections: ConnectionsService) {}

  @Get('connections')
  @Action('workspace.read')
  list(@Workspace() ws: WorkspaceContext) {
    return this.connections.list(ws);
  }

  @Post('connections')
  @HttpCode(200)
  @Action('connection.manage')
  start(@Workspace() ws: WorkspaceContext, @Body() body: StartConnectionDto) {
    return this.connections.start(ws, body);
  }

  @Post('connections/:connectionId/restricted-key')
  @HttpCode(200)
  @Action('connection.manage')
  restrictedKey(@Workspace() ws: WorkspaceContext, @Param('connectionId') id: string, @Body() body: RestrictedKeyDto) {
    return this.connections.restrictedKey(ws, id, body.api_key);
  }

  @Post('connections/:connectionId/reconnect')
  @HttpCode(200)
  @Action('connection.manage')
  reconnect(@Workspace() ws: WorkspaceContext, @Param('connectionId') id: string, @Body() body: ReconnectDto) {
    return this.connections.reconnect(ws, id, body);
  }

  @Post('connections/:connectionId/disable')
  @HttpCode(200)
  @Action('connection.manage')
  disable(@Workspace() ws: WorkspaceContext, @Param('connectionId') id: string) {
    return this.connections.disable(ws, id);
  }

  @Post('connections/:connectionId/purge-credential')
  @HttpCode(200)
  @Action('connection.manage')
  purge(@Workspace() ws: WorkspaceContext, @Param('connectionId') id: string) {
    return this.connections.purge(ws, id);
  }

  @Delete('connections/:connectionId')
  @HttpCode(204)
  @Action('connection.manage')
  async discard(@Workspace() ws: WorkspaceContext, @Param('connectionId') id: string): Promise<void> {
    await this.connections.discard(ws, id);
  }

  @Post('connections/:connectionId/federated-complete')
  @HttpCode(200)
  @Action('connection.manage')
  federatedComplete(@Workspace() ws: WorkspaceContext, @Param('connectionId') id: string, @Body() body: FederatedCompleteDto) {
    return this.connections.federatedComplete(ws, id, body);
  }

  @Post('catalog-providers')
  @HttpCode(200)
  @Action('connection.manage')
  registerProvider(@Workspace() ws: WorkspaceContext, @Body() body: CatalogProviderDto) {
    return this.connections.registerProvider(ws, body);
  }
}

/** The vendor's redirect target: outside /api/v1, no Authorization (bound to the single-use state row). */
@Controller('oauth')
export class OAuthController {
  constructor(private readonly oauth: OAuthService) {}

  @Get('callback')
  @Public()
  @Redirect()
  async callback(@Query() query: Record<string, unknown>) {
    return { url: await this.oauth.callback(query), statusCode: 302 };
  }
}
