import { Body, Controller, Get, Headers, HttpCode, Param, Post, Query, Res } from '@nestjs/common';
import { Action } from 'src/platform/access/decorators';
import { Workspace, WorkspaceContext } from 'src/platform/access/context';
import { Answers, Returns, Streams } from 'src/common/http/documented';
import { EventsQuery, MessagesQuery, ResendDto } from 'src/modules/notifications/dto/endpoint.dto';
import { EventStreamService } from 'src/modules/notifications/event-stream.service';
import { NotificationMessagesService } from 'src/modules/notifications/notification-messages.service';
import { NOTIFICATION_MESSAGE_LIST_SCHEMA, REQUEUED_SCHEMA } from 'src/modules/notifications/notifications.responses';

@Controller('api/v1/workspaces/:ws')
export class NotificationMessagesController {
  constructor(
    private readonly messages: NotificationMessagesService,
    private readonly stream: EventStreamService,
  ) {}

  @Get('notification-messages')
  @Returns(NOTIFICATION_MESSAGE_LIST_SCHEMA)
  @Answers(422, '`invalid UTC window`, `from and to must be provided together`, `unknown event type`, `invalid cursor`', 'ValidationError')
  @Action('workspace.read')
  list(@Workspace() ws: WorkspaceContext, @Query() q: MessagesQuery) {
    return this.messages.list(ws, q);
  }

  /** The message again, same `webhook-id`: to `endpoint_id`, or to every endpoint it was addressed to. */
  @Post('notification-messages/:messageId/resend')
  @HttpCode(202)
  @Returns(REQUEUED_SCHEMA)
  @Answers(404, '`notification message not found`, `notification endpoint not found`')
  @Action('notification.manage')
  resend(@Workspace() ws: WorkspaceContext, @Param('messageId') messageId: string, @Body() body: ResendDto) {
    return this.messages.resend(ws, messageId, body.endpoint_id);
  }

  /** Server-Sent Events; `Last-Event-ID` (or `after`) replays what the outbox still holds after that message. */
  @Get('events')
  @Streams('text/event-stream', 'One event per message: `id: <message_id>`, `event: <type>`, `data: <message JSON>`; a comment line at least every 15 s. `audit.event` only when `types` names it.')
  @Answers(422, '`types must be comma-separated event types or prefix.* patterns`', 'ValidationError')
  @Action('workspace.read')
  async events(@Workspace() ws: WorkspaceContext, @Query() q: EventsQuery, @Headers('last-event-id') lastEventId: string | undefined, @Res() res: unknown): Promise<void> {
    const types = this.stream.parseTypes(q.types);
    await this.stream.open(ws, types, lastEventId || q.after, res);
  }
}
