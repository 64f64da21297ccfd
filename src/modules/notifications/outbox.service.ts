import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { errorFields } from 'src/common/logging/error-fields';
import { newId } from 'src/common/ids/ids';
import { formatTimeRequired, formatTimeSql } from 'src/common/time/time';
import { Tx } from 'src/database/transaction';
import { AuditService } from 'src/modules/audit/audit.service';
import { EventHub } from 'src/modules/notifications/event-hub';
import { EventType, messageJson } from 'src/modules/notifications/events';
import { EmittedColumns, emittedWith, NotificationMessagesRepository } from 'src/modules/notifications/notification-messages.repository';
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

/** A message written by the act's own statement (`emittedWith`): the values it binds there, and what follows its answer. */
export interface Riding {
  values: unknown[];
  /** With the statement's answer: after commit, the message reaches the event streams and wakes delivery. */
  written(answer: EmittedColumns): void;
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

  /** `audit.event` rides on the audit append: its `occurred_at` is the appended row's (`ev`). */
  onModuleInit(): void {
    this.audit.carry({
      statement: (first) => emittedWith('ev', first, `to_json(${formatTimeSql('ev.occurred_at')})::text`),
      bind: (tx, event) => this.riding(tx, event.workspace_id, 'audit.event', event, 'occurred_at'),
    });
  }

  /** The message id, or null when the dedupe key was used before. */
  async emit(tx: Tx, workspaceId: string, type: EventType, data: object, options: EmitOptions = {}): Promise<string | null> {
    const now = new Date();
    const id = newId('msg');
    const body = this.body(workspaceId, type, data, now);
    const stored = await this.messages.emit(tx.manager, { id, workspaceId, type, body, dedupe: options.dedupe ?? null, createdAt: now }, options.endpointId);
    if (!stored) return null;
    this.written(tx, workspaceId, id, type, body, stored.deliveries);
    return id;
  }

  /**
   * The message written by a statement of the act itself (`emittedWith`), saving the act a round
   * trip: the body is made here but for `data[hole]`, which the statement fills in (a value only the
   * database knows, such as the audit row's `occurred_at`). The body is cut at a random marker, so
   * no text of the act's own (a target, a detail) can be taken for it.
   */
  riding(tx: Tx, workspaceId: string, type: EventType, data: object, hole: string): Riding {
    const now = new Date();
    const id = newId('msg');
    const marker = `hole_${randomBytes(16).toString('hex')}`;
    const parts = this.body(workspaceId, type, { ...data, [hole]: marker }, now).split(`"${marker}"`);
    if (parts.length !== 2) throw new Error(`outbox: the body of ${type} must hold its hole once`);
    return {
      values: [id, workspaceId, type, parts[0], parts[1], now],
      written: (answer) => {
        if (answer.outbox_body !== null) this.written(tx, workspaceId, id, type, answer.outbox_body, answer.outbox_deliveries);
      },
    };
  }

  private body(workspaceId: string, type: EventType, data: object, now: Date): string {
    return messageJson({ type, timestamp: formatTimeRequired(now), data: { ...data, workspace_id: workspaceId } });
  }

  /** After commit: to the event streams (not awaited: the act's answer does not wait; a failure is logged), and delivery woken. */
  private written(tx: Tx, workspaceId: string, id: string, type: EventType, body: string, deliveries: number): void {
    tx.afterCommit(() => {
      this.hub.publish({ workspace_id: workspaceId, id, type, body }).catch((error: unknown) => this.logger.warn({ msg: 'event stream publish failed', ...errorFields(error) }));
      return Promise.resolve();
    });
    if (deliveries > 0) tx.afterCommit(() => Promise.resolve(this.waker.wake()));
  }
}
