import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { errorFields } from 'src/common/logging/error-fields';
import { APP_CONFIG, AppConfig } from 'src/config/config';
import { AuditService } from 'src/modules/audit/audit.service';
import { DeliveryWaker } from 'src/modules/notifications/delivery-waker';
import { OutboxMessage } from 'src/modules/notifications/events';
import { DeliveryState } from 'src/modules/notifications/entities/notification-delivery.entity';
import { AttemptRecord, ClaimedDelivery, NotificationMessagesRepository } from 'src/modules/notifications/notification-messages.repository';
import { NotificationEndpointsRepository } from 'src/modules/notifications/notification-endpoints.repository';
import { OutboxService } from 'src/modules/notifications/outbox.service';
import { signatureHeader } from 'src/modules/notifications/signature';
import { slackBody } from 'src/modules/notifications/slack';
import { WebhookPoster } from 'src/modules/notifications/webhook-post';

/** Attempts in flight on this process, in all and to one endpoint: a hanging receiver holds only its own share. */
const MAX_IN_FLIGHT = 128;
const MAX_PER_ENDPOINT = 16;
/** Deliveries one claim takes at most; an endpoint is left out of a claim unless a whole batch still fits its bound. */
const CLAIM_BATCH = 8;
/** Attempts settled by one statement at most (those that finished while the previous one ran). */
const SETTLE_BATCH = 64;
/** A claim outlives its attempt's bound by this much; a replica that died mid-attempt releases its claims after it. */
const LEASE_SLACK_MS = 30_000;

/**
 * Delivers the outbox to endpoints: claims due deliveries (`FOR UPDATE SKIP LOCKED` and a lease, so
 * replicas never attempt one delivery at once), POSTs each signed message without waiting for the
 * others, logs the attempt, schedules the retry or settles the delivery, and disables an endpoint
 * that answers 410 or has failed without a success for `NOTIFY_DISABLE_AFTER_S`.
 */
@Injectable()
export class DeliveryService implements OnApplicationShutdown {
  private readonly logger = new Logger('notifications');
  private readonly poster: WebhookPoster;
  private readonly inFlight = new Map<string, number>();
  private total = 0;
  private passing = false;
  private again = false;
  private stopped = false;
  private readonly settling: { attempt: AttemptRecord; next: { state: DeliveryState; nextAttemptAt: Date | null }; done: (failingSince: Date | null, error?: unknown) => void }[] = [];
  private flushing = false;

  constructor(
    private readonly messages: NotificationMessagesRepository,
    private readonly endpoints: NotificationEndpointsRepository,
    private readonly outbox: OutboxService,
    private readonly audit: AuditService,
    waker: DeliveryWaker,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    this.poster = new WebhookPoster(config.notify.timeoutMs, config.notify.allowPrivateTargets);
    waker.onWake(() => void this.pass());
  }

  onApplicationShutdown(): void {
    this.stopped = true;
    this.poster.close();
  }

  /** Retries come due with time; a commit on this process wakes delivery at once (DeliveryWaker). */
  @Interval('notification-delivery', 1000)
  tick(): void {
    void this.pass();
  }

  /** One claiming pass (passes never overlap; a wake during one runs another after it). */
  async pass(): Promise<void> {
    if (this.passing) {
      this.again = true;
      return;
    }
    this.passing = true;
    try {
      do {
        this.again = false;
        const free = MAX_IN_FLIGHT - this.total;
        if (free <= 0 || this.stopped) break;
        const busy = [...this.inFlight].filter(([, n]) => n > MAX_PER_ENDPOINT - CLAIM_BATCH).map(([id]) => id);
        const now = new Date();
        const limit = Math.min(free, CLAIM_BATCH);
        const claimed = await this.messages.claim(now, new Date(now.getTime() + this.config.notify.timeoutMs + LEASE_SLACK_MS), busy, limit);
        for (const delivery of claimed) this.start(delivery);
        if (claimed.length === limit) this.again = true;
      } while (this.again);
    } catch (error) {
      this.logger.warn({ msg: 'notification delivery pass failed', ...errorFields(error) });
    } finally {
      this.passing = false;
    }
  }

  private start(d: ClaimedDelivery): void {
    this.total++;
    this.inFlight.set(d.endpoint_id, (this.inFlight.get(d.endpoint_id) ?? 0) + 1);
    this.attempt(d)
      .catch((error: unknown) => this.logger.warn({ msg: 'notification attempt not recorded', ...errorFields(error) }))
      .finally(() => {
        const left = (this.inFlight.get(d.endpoint_id) ?? 1) - 1;
        const saturated = left + 1 > MAX_PER_ENDPOINT - CLAIM_BATCH || this.total >= MAX_IN_FLIGHT;
        this.total--;
        if (left === 0) this.inFlight.delete(d.endpoint_id);
        else this.inFlight.set(d.endpoint_id, left);
        if (saturated) void this.pass();
      });
  }

  private async attempt(d: ClaimedDelivery): Promise<void> {
    const started = new Date();
    const attempt = d.attempts + 1;
    const message = JSON.parse(d.body) as OutboxMessage;
    const body = d.format === 'slack' ? slackBody(message, this.config.webUrl) : d.body;
    const timestamp = Math.floor(started.getTime() / 1000);
    const secrets = [d.secret, ...(d.previous_secret && d.previous_secret_until && d.previous_secret_until > started ? [d.previous_secret] : [])];
    const outcome = await this.poster.post(
      d.url,
      {
        'content-type': 'application/json',
        'user-agent': 'control-plane-notifications/1',
        'webhook-id': d.message_id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signatureHeader(secrets, d.message_id, timestamp, body),
      },
      body,
    );
    const succeeded = outcome.error === null;
    const schedule = this.config.notify.retryScheduleSeconds;
    const retryIn = schedule[attempt - 1];
    const next = succeeded
      ? { state: 'delivered' as const, nextAttemptAt: null }
      : retryIn !== undefined
        ? { state: 'pending' as const, nextAttemptAt: new Date(Date.now() + retryIn * 1000) }
        : { state: 'failed' as const, nextAttemptAt: null };
    const failingSince = await this.settle(
      {
        workspaceId: d.workspace_id,
        endpointId: d.endpoint_id,
        messageId: d.message_id,
        type: d.type,
        attempt,
        status: succeeded ? 'succeeded' : 'failed',
        responseStatus: outcome.responseStatus,
        error: outcome.error,
        durationMs: Date.now() - started.getTime(),
        responseExcerpt: outcome.excerpt,
        attemptedAt: started,
      },
      next,
    );
    if (outcome.responseStatus === 410) await this.disable(d, 'gone');
    else if (!succeeded && failingSince && Date.now() - failingSince.getTime() >= this.config.notify.disableAfterSeconds * 1000) await this.disable(d, 'failing');
  }

  /**
   * Group commit: an attempt's record waits while a settle statement runs, and the attempts that
   * finished meanwhile are written together by the next one (each attempt is answered only after
   * its own record committed; a crash before that leaves the claim to lapse and the attempt to be
   * made again, as with one write per attempt). Answers since when the endpoint has been failing.
   */
  private settle(attempt: AttemptRecord, next: { state: DeliveryState; nextAttemptAt: Date | null }): Promise<Date | null> {
    return new Promise((resolve, reject) => {
      this.settling.push({ attempt, next, done: (failingSince, error) => (error === undefined ? resolve(failingSince) : reject(error as Error)) });
      void this.flush();
    });
  }

  private async flush(): Promise<void> {
    if (this.flushing) return;
    this.flushing = true;
    try {
      while (this.settling.length > 0) {
        const batch = this.settling.splice(0, SETTLE_BATCH);
        try {
          const failing = await this.messages.settle(batch);
          for (const x of batch) x.done(failing.get(x.attempt.endpointId) ?? null);
        } catch (error) {
          for (const x of batch) x.done(null, error ?? new Error('settle failed'));
        }
      }
    } finally {
      this.flushing = false;
    }
  }

  /** Disables the endpoint once (a concurrent attempt finds it disabled), with its audit row and event. */
  private async disable(d: ClaimedDelivery, reason: 'gone' | 'failing'): Promise<void> {
    await this.endpoints.transaction(async (tx) => {
      const row = await this.endpoints.disable(tx.manager, d.endpoint_id, reason);
      if (!row) return;
      await this.audit.record(tx, { workspaceId: row.workspaceId, actor: null, action: 'notification_endpoint.disable', target: row.id, detail: { reason } });
      await this.outbox.emit(tx, row.workspaceId, 'notification_endpoint.disabled', { endpoint_id: row.id, reason });
    });
  }
}
