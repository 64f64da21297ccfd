import { Injectable } from '@nestjs/common';
import { WorkspaceContext } from 'src/platform/access/context';
import { WorkspaceAccess } from 'src/platform/access/workspace-access.service';
import { ApiError, queryError } from 'src/common/http/errors';
import { decodeCursor, encodeCursor } from 'src/common/pagination/cursor';
import { formatTimeRequired, requestWindow } from 'src/common/time/time';
import { MessagesQuery } from 'src/modules/notifications/dto/endpoint.dto';
import { toMessageDocument } from 'src/modules/notifications/dto/notification.document';
import { EVENT_TYPES } from 'src/modules/notifications/events';
import { NotificationEndpointsRepository } from 'src/modules/notifications/notification-endpoints.repository';
import { ENDPOINT_NOT_FOUND } from 'src/modules/notifications/notification-endpoints.service';
import { DeliveryRow, NotificationMessagesRepository } from 'src/modules/notifications/notification-messages.repository';
import { DeliveryWaker } from 'src/modules/notifications/delivery-waker';

export const MESSAGE_NOT_FOUND = 'notification message not found';
const CURSOR = { at: 'timestamp', seq: 'string' } as const;

/** The outbox as operators read it, and resend. */
@Injectable()
export class NotificationMessagesService {
  constructor(
    private readonly access: WorkspaceAccess,
    private readonly messages: NotificationMessagesRepository,
    private readonly endpoints: NotificationEndpointsRepository,
    private readonly waker: DeliveryWaker,
  ) {}

  async list(ws: WorkspaceContext, q: MessagesQuery) {
    const window = requestWindow(q.from, q.to);
    if (q.type !== undefined && !(EVENT_TYPES as readonly string[]).includes(q.type)) throw queryError('type', 'unknown event type');
    const scope = `notification-messages:${ws.id}`;
    let after: { at: Date; seq: string } | undefined;
    if (q.cursor !== undefined) {
      const value = decodeCursor(CURSOR, scope, q.cursor);
      if (!value) throw queryError('cursor', 'invalid cursor');
      if (!/^[0-9]{1,19}$/.test(value.seq)) throw queryError('cursor', 'invalid cursor');
      after = { at: new Date(value.at), seq: value.seq };
    }
    const rows = await this.messages.list(ws.id, { from: window?.from, to: window?.to, type: q.type, after, limit: q.limit + 1 });
    const page = rows.slice(0, q.limit);
    const deliveries = new Map<string, DeliveryRow[]>();
    for (const d of page.length ? await this.messages.deliveriesOf(ws.id, page.map((m) => m.id)) : []) deliveries.set(d.message_id, [...(deliveries.get(d.message_id) ?? []), d]);
    const last = page[page.length - 1];
    return {
      messages: page.map((m) => toMessageDocument(m, deliveries.get(m.id) ?? [])),
      next_cursor: rows.length > q.limit ? encodeCursor(CURSOR, scope, { at: formatTimeRequired(last.created_at), seq: String(last.seq) }) : null,
    };
  }

  /** Delivers the message again, with the same `webhook-id`, to one endpoint or to every endpoint it was addressed to. */
  async resend(ctx: WorkspaceContext, messageId: string, endpointId: string | undefined) {
    const requeued = await this.access.mutate(ctx, async (tx, ws) => {
      if (!(await this.messages.find(ws.id, messageId))) throw new ApiError(404, MESSAGE_NOT_FOUND);
      if (endpointId !== undefined && !(await this.endpoints.find(ws.id, endpointId, tx.manager))) throw new ApiError(404, ENDPOINT_NOT_FOUND);
      const targets = endpointId !== undefined ? [endpointId] : await this.messages.addressedTo(tx.manager, ws.id, messageId);
      await this.messages.requeue(tx.manager, ws.id, messageId, targets, new Date());
      return targets.length;
    });
    this.waker.wake();
    return { requeued };
  }
}
