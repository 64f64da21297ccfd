import { Body, Controller, Delete, Get, HttpCode, Param, Post, Redirect, Req } from '@nestjs/common';
import { Action, Public } from 'src/platform/access/decorators';
import { Workspace, WorkspaceContext } from 'src/platform/access/context';
import { Answers, OnlyRefuses, Returns } from 'src/common/http/documented';
import { CONNECTION_ENVELOPE_SCHEMA, CONNECTION_LIST_SCHEMA, CONNECTION_SCHEMA } from 'src/modules/connections/connections.responses';
import { BrokerProvidersService } from 'src/modules/connections/broker-providers.service';
import { ConnectionProjections } from 'src/modules/connections/connection-projections.service';
import { ToolConnectionsService } from 'src/modules/connections/tool-connections.service';
import { CatalogProviderDto, FederatedCompleteDto, ReconnectDto, RestrictedKeyDto, StartConnectionDto } from 'src/modules/connections/dto/connection.dto';
import { OAuthService } from 'src/modules/connections/oauth.service';

const NOT_FOUND = '`connection not found`';
const LIVE_KEY = '`full live keys are refused; use a restricted key`';
const UPSTREAM = 'code `upstream_error`: the gateway could not seal the secret';

@Controller('api/v1/workspaces/:ws')
export class ConnectionsController {
  constructor(
    private readonly connections: ToolConnectionsService,
    private readonly projections: ConnectionProjections,
    private readonly brokers: BrokerProvidersService,
  ) {}

  @Get('connections')
  @Returns(CONNECTION_LIST_SCHEMA)
  @Action('workspace.read')
  list(@Workspace() ws: WorkspaceContext) {
    return this.projections.list(ws);
  }

  @Post('connections')
  @HttpCode(200)
  @Returns(CONNECTION_ENVELOPE_SCHEMA)
  @Answers(400, '`catalog source is not available`, `connection does not accept an oauth client secret`, `oauth client id is required`, ' + LIVE_KEY)
  @Answers(404, '`unknown catalog slug`')
  @Answers(409, '`connector already has a live connection`')
  @Answers(502, UPSTREAM, 'ServiceError')
  @Action('connection.manage')
  start(@Workspace() ws: WorkspaceContext, @Body() body: StartConnectionDto) {
    return this.connections.start(ws, body);
  }

  @Post('connections/:connectionId/restricted-key')
  @HttpCode(200)
  @Returns(CONNECTION_SCHEMA)
  @Answers(400, '`connection is not an api_key profile`, ' + LIVE_KEY)
  @Answers(404, NOT_FOUND)
  @Answers(409, '`connection is not pending`')
  @Answers(502, UPSTREAM, 'ServiceError')
  @Action('connection.manage')
  restrictedKey(@Workspace() ws: WorkspaceContext, @Param('connectionId') id: string, @Body() body: RestrictedKeyDto) {
    return this.connections.restrictedKey(ws, id, body.api_key);
  }

  @Post('connections/:connectionId/reconnect')
  @HttpCode(200)
  @Returns(CONNECTION_ENVELOPE_SCHEMA)
  @Answers(400, '`provide only one credential`, `connection does not accept an oauth client secret`, `connection does not accept an api key`, `catalog source is not available`, ' + LIVE_KEY)
  @Answers(404, NOT_FOUND)
  @Answers(409, '`connection is not pending`, `connector already has a live connection`')
  @Answers(502, UPSTREAM, 'ServiceError')
  @Action('connection.manage')
  reconnect(@Workspace() ws: WorkspaceContext, @Param('connectionId') id: string, @Body() body: ReconnectDto) {
    return this.connections.reconnect(ws, id, body);
  }

  @Post('connections/:connectionId/disable')
  @HttpCode(200)
  @Returns(CONNECTION_SCHEMA)
  @Answers(404, NOT_FOUND)
  @Action('connection.manage')
  disable(@Workspace() ws: WorkspaceContext, @Param('connectionId') id: string) {
    return this.connections.disable(ws, id);
  }

  @Post('connections/:connectionId/purge-credential')
  @HttpCode(200)
  @Returns(CONNECTION_SCHEMA)
  @Answers(404, NOT_FOUND)
  @Action('connection.manage')
  purge(@Workspace() ws: WorkspaceContext, @Param('connectionId') id: string) {
    return this.connections.purge(ws, id);
  }

  @Delete('connections/:connectionId')
  @HttpCode(204)
  @Answers(404, NOT_FOUND)
  @Answers(409, '`connection has held a credential and is kept as a record`')
  @Action('connection.manage')
  async discard(@Workspace() ws: WorkspaceContext, @Param('connectionId') id: string): Promise<void> {
    await this.connections.discard(ws, id);
  }

  @Post('connections/:connectionId/federated-complete')
  @HttpCode(200)
  @OnlyRefuses()
  @Answers(400, '`invalid upstream connection id`, `mcp target is not allowed`')
  @Answers(404, NOT_FOUND)
  @Answers(
    409,
    '`broker_verification_unavailable` (every well-formed request), `catalog session is not available`, `connection is not pending`, `connection is not federated`, `connection snapshot is not published`',
  )
  @Action('connection.manage')
  federatedComplete(@Workspace() ws: WorkspaceContext, @Param('connectionId') id: string, @Body() body: FederatedCompleteDto) {
    return this.connections.federatedComplete(ws, id, body);
  }

  @Post('catalog-providers')
  @HttpCode(200)
  @Returns(CONNECTION_ENVELOPE_SCHEMA)
  @Answers(400, LIVE_KEY)
  @Answers(502, UPSTREAM, 'ServiceError')
  @Action('connection.manage')
  registerProvider(@Workspace() ws: WorkspaceContext, @Body() body: CatalogProviderDto) {
    return this.brokers.register(ws, body);
  }
}

/** The vendor's redirect target: outside /api/v1, no Authorization (bound to the single-use state row). */
@Controller('oauth')
export class OAuthController {
  constructor(private readonly oauth: OAuthService) {}

  // The vendor's query is read raw, not through a DTO: the callback answers only the one 400 or a 302 (`status=error`), never a 422.
  @Get('callback')
  @Public()
  @Redirect()
  @Answers(400, '`invalid or expired oauth state` (missing, malformed, unknown, expired or consumed state)')
  async callback(@Req() request: { query: Record<string, unknown> }) {
    return { url: await this.oauth.callback(request.query), statusCode: 302 };
  }
}
