import { Body, Controller, Delete, Get, Headers, HttpCode, Param, Put, Res } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { Action } from 'src/platform/access/decorators';
import { Workspace, WorkspaceContext } from 'src/platform/access/context';
import { Answers, Returns } from 'src/common/http/documented';
import { ChecksOwnFormat } from 'src/platform/http/input-text.guard';
import { WebhookSubscriptionsService } from 'src/modules/webhooks/webhook-subscriptions.service';
import { SUBSCRIPTION_LIST_SCHEMA, SUBSCRIPTION_SCHEMA } from 'src/modules/webhooks/webhooks.responses';

const CONNECTION_NOT_FOUND = '`connection not found`';
const NOT_FOUND = `${CONNECTION_NOT_FOUND}, \`webhook subscription not found\``;

@Controller('api/v1/workspaces/:ws/connections/:connectionId/webhooks')
export class WebhookSubscriptionsController {
  constructor(
    private readonly subscriptions: WebhookSubscriptionsService,
    private readonly adapterHost: HttpAdapterHost,
  ) {}

  @Get()
  @Returns(SUBSCRIPTION_LIST_SCHEMA)
  @Answers(404, CONNECTION_NOT_FOUND)
  @Action('workspace.read')
  list(@Workspace() ws: WorkspaceContext, @Param('connectionId') connectionId: string) {
    return this.subscriptions.list(ws, connectionId);
  }

  @Get(':subscriptionId')
  @Returns(SUBSCRIPTION_SCHEMA)
  @Answers(404, NOT_FOUND)
  @Action('workspace.read')
  get(@Workspace() ws: WorkspaceContext, @Param('connectionId') connectionId: string, @Param('subscriptionId') subscriptionId: string) {
    return this.subscriptions.get(ws, connectionId, subscriptionId);
  }

  /** 201 when the subscription is created, 200 when it is replaced. The body is validated by the service (opaque errors). */
  @Put(':subscriptionId')
  @HttpCode(200)
  @Returns(SUBSCRIPTION_SCHEMA)
  @Answers(201, 'A new subscription (a replaced one answers 200)', SUBSCRIPTION_SCHEMA)
  @Answers(404, CONNECTION_NOT_FOUND)
  @Answers(409, '`signature profile does not fit the connection`')
  @Answers(413, '`request body too large` (over 128 KiB)')
  @Answers(422, 'The closed configuration schema, never echoing the rejected value; a `subscription_id` other than `wsub_` plus 1-64 letters, digits, `_` or `-`', 'ValidationError')
  @ChecksOwnFormat('subscriptionId')
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
  @Answers(404, NOT_FOUND)
  @Action('connection.manage')
  async delete(@Workspace() ws: WorkspaceContext, @Param('connectionId') connectionId: string, @Param('subscriptionId') subscriptionId: string): Promise<void> {
    await this.subscriptions.delete(ws, connectionId, subscriptionId);
  }
}
