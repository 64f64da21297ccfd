import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { errorFields } from 'src/common/logging/error-fields';
import { newId } from 'src/common/ids/ids';
import { formatTimeRequired } from 'src/common/time/time';
import { Tx } from 'src/database/transaction';
import { AuditService } from 'src/modules/audit/audit.service';
import { EventHub } from 'src/modules/notifications/event-hub';
import { EventType, messageJson } from 'src/modules/notifications/events';
import { NotificationMessagesRepository } from 'src/modules/notifications/notification-messages.repository';
import { DeliveryWaker } from 'src/modules/notifications/delivery-waker';

export interface EmitOptions {
  /**
   * Emitted at most once per workspace and key (events from time and ingestion); `until`: the
   * instant after which the emitter can no longer emit this key (the message is kept until then).
   */
  dedupe?: { key: string; until: Date };
  /** Addressed to this endpoint only (the test ping). */
  endpointId?: string;
}

/**
 * The transactional outbox: a message is written in the transaction of the act that causes it, so
 * a rolled-back act emits nothing; after commit it reaches the event streams and wakes delivery.
 */
@Injectable()
export class OutboxService implements OnModuleInit {
  private readonly logger = new Logger('notifications');

  constructor(
    private readonly messages: NotificationMessagesRepository,
    private readonly hub: EventHub,
    private readonly waker: DeliveryWaker,
    private readonly audit: AuditService,
  ) {}

  onModuleInit(): void {
    this.audit.onRecord(async (tx, event) => {
      await this.emit(tx, event.workspace_id, 'audit.event', event);
    });
  }

  /** The message id, or null when the dedupe key was used before. */
  async emit(tx: Tx, workspaceId: string, type: EventType, data: object, options: EmitOptions = {}): Promise<string | null> {
    const now = new Date();
    const id = newId('msg');
    const body = messageJson({ type, timestamp: formatTimeRequired(now), data: { ...data, workspace_id: workspaceId } });
    const stored = await this.messages.emit(tx.manager, { id, workspaceId, type, body, dedupe: options.dedupe ?? null, createdAt: now }, options.endpointId);
    if (!stored) return null;
    // Not awaited: the act's answer does not wait for the event streams (a failure is logged).
    tx.afterCommit(() => {
      this.hub.publish({ workspace_id: workspaceId, id, type, body }).catch((error: unknown) => this.logger.warn({ msg: 'event stream publish failed', ...errorFields(error) }));
      return Promise.resolve();
    });
    if (stored.deliveries > 0) tx.afterCommit(() => Promise.resolve(this.waker.wake()));
    return id;
  }
}
