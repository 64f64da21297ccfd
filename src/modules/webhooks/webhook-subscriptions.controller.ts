import { Body, Controller, Delete, Get, Headers, HttpCode, Param, Put, Res } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { Action } from 'src/common/access/decorators';
import { Workspace, WorkspaceContext } from 'src/common/access/context';
import { WebhookSubscriptionsService } from 'src/modules/webhooks/webhook-subscriptions.service';

@Controller('api/v1/workspaces/:ws/connections/:connectionId/webhooks')
export class WebhookSubscriptionsController {
  constructor(
    private readonly subscriptions: WebhookSubscriptionsService,
    private readonly adapterHost: HttpAdapterHost,
  ) {}

  @Get()
  @Action('workspace.read')
  list(@Workspace() ws: WorkspaceContext, @Param('connectionId') connectionId: string) {
    return this.subscriptions.list(ws, connectionId);
  }

  @Get(':subscriptionId')
  @Action('workspace.read')
  get(@Workspace() ws: WorkspaceContext, @Param('connectionId') connectionId: string, @Param('subscriptionId') subscriptionId: string) {
    return this.subscriptions.get(ws, connectionId, subscriptionId);
  }

  /** 201 when the subscription is created, 200 when it is replaced. The body is validated by the service (opaque errors). */
  @Put(':subscriptionId')
  @HttpCode(200)
  @Action('connection.manage')
  async put(
    @Workspace() ws: WorkspaceContext,
    @Param('connectionId') connectionId: string,
    @Param('subscriptionId') subscriptionId: string,
    @Body() body: unknown,
    @Headers('content-length') contentLength: string | undefined,
    @Res({ passthrough: true }) res: unknown,
  ) {
    const { created, subscription } = await this.subscriptions.put(ws, connectionId, subscriptionId, body, contentLength);
    if (created) this.adapterHost.httpAdapter.status(res, 201);
    return subscription;
  }

  @Delete(':subscriptionId')
  @HttpCode(204)
  @Action('connection.manage')
  async delete(@Workspace() ws: WorkspaceContext, @Param('connectionId') connectionId: string, @Param('subscriptionId') subscriptionId: string): Promise<void> {
    await this.subscriptions.delete(ws, connectionId, subscriptionId);
  }
}
