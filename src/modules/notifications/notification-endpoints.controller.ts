import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { Action } from 'src/platform/access/decorators';
import { Workspace, WorkspaceContext } from 'src/platform/access/context';
import { Answers, Returns } from 'src/common/http/documented';
import { AttemptsQuery, CreateEndpointDto, RecoverDto, RotateSecretDto, UpdateEndpointDto } from 'src/modules/notifications/dto/endpoint.dto';
import { NotificationEndpointsService } from 'src/modules/notifications/notification-endpoints.service';
import {
  MESSAGE_ACCEPTED_SCHEMA,
  NOTIFICATION_ATTEMPT_LIST_SCHEMA,
  NOTIFICATION_ENDPOINT_LIST_SCHEMA,
  NOTIFICATION_ENDPOINT_SCHEMA,
  NOTIFICATION_ENDPOINT_WITH_SECRET_SCHEMA,
  REQUEUED_SCHEMA,
} from 'src/modules/notifications/notifications.responses';

const NOT_FOUND = '`notification endpoint not found`';
const URL_REFUSED = '`url must not point to a private or local address`, `url must use https`, an unknown event type';

@Controller('api/v1/workspaces/:ws/notification-endpoints')
export class NotificationEndpointsController {
  constructor(private readonly endpoints: NotificationEndpointsService) {}

  /** The answer carries the signing `secret`: the only time besides rotate-secret. */
  @Post()
  @HttpCode(201)
  @Returns(NOTIFICATION_ENDPOINT_WITH_SECRET_SCHEMA)
  @Answers(409, '`notification endpoint limit reached` (20 per workspace)')
  @Answers(422, URL_REFUSED, 'ValidationError')
  @Action('notification.manage')
  create(@Workspace() ws: WorkspaceContext, @Body() body: CreateEndpointDto) {
    return this.endpoints.create(ws, body);
  }

  @Get()
  @Returns(NOTIFICATION_ENDPOINT_LIST_SCHEMA)
  @Action('workspace.read')
  list(@Workspace() ws: WorkspaceContext) {
    return this.endpoints.list(ws);
  }

  @Get(':endpointId')
  @Returns(NOTIFICATION_ENDPOINT_SCHEMA)
  @Answers(404, NOT_FOUND)
  @Action('workspace.read')
  get(@Workspace() ws: WorkspaceContext, @Param('endpointId') id: string) {
    return this.endpoints.get(ws, id);
  }

  @Patch(':endpointId')
  @Returns(NOTIFICATION_ENDPOINT_SCHEMA)
  @Answers(404, NOT_FOUND)
  @Answers(409, '`notification endpoint revision changed`')
  @Answers(422, URL_REFUSED, 'ValidationError')
  @Action('notification.manage')
  update(@Workspace() ws: WorkspaceContext, @Param('endpointId') id: string, @Body() body: UpdateEndpointDto) {
    return this.endpoints.update(ws, id, body);
  }

  /** Pending deliveries to the endpoint are dropped with it. */
  @Delete(':endpointId')
  @HttpCode(204)
  @Answers(404, NOT_FOUND)
  @Action('notification.manage')
  async delete(@Workspace() ws: WorkspaceContext, @Param('endpointId') id: string): Promise<void> {
    await this.endpoints.delete(ws, id);
  }

  /** The new `secret`, shown once; during `grace_seconds` every delivery carries both signatures. */
  @Post(':endpointId/rotate-secret')
  @HttpCode(200)
  @Returns(NOTIFICATION_ENDPOINT_WITH_SECRET_SCHEMA)
  @Answers(404, NOT_FOUND)
  @Action('notification.manage')
  rotateSecret(@Workspace() ws: WorkspaceContext, @Param('endpointId') id: string, @Body() body: RotateSecretDto) {
    return this.endpoints.rotateSecret(ws, id, body);
  }

  /** A `notification.test` message to this endpoint only. */
  @Post(':endpointId/test')
  @HttpCode(202)
  @Returns(MESSAGE_ACCEPTED_SCHEMA)
  @Answers(404, NOT_FOUND)
  @Action('notification.manage')
  test(@Workspace() ws: WorkspaceContext, @Param('endpointId') id: string) {
    return this.endpoints.test(ws, id);
  }

  /** Every message since `since` whose delivery to this endpoint failed is delivered again, same `webhook-id`. */
  @Post(':endpointId/recover')
  @HttpCode(202)
  @Returns(REQUEUED_SCHEMA)
  @Answers(404, NOT_FOUND)
  @Answers(422, '`since must be an RFC 3339 timestamp`, `since must be within N days` (NOTIFY_RETENTION_DAYS)', 'ValidationError')
  @Action('notification.manage')
  recover(@Workspace() ws: WorkspaceContext, @Param('endpointId') id: string, @Body() body: RecoverDto) {
    return this.endpoints.recover(ws, id, body.since);
  }

  @Get(':endpointId/attempts')
  @Returns(NOTIFICATION_ATTEMPT_LIST_SCHEMA)
  @Answers(404, NOT_FOUND)
  @Answers(422, '`invalid cursor`', 'ValidationError')
  @Action('workspace.read')
  attempts(@Workspace() ws: WorkspaceContext, @Param('endpointId') id: string, @Query() q: AttemptsQuery) {
    return this.endpoints.attempts(ws, id, q);
  }
}
