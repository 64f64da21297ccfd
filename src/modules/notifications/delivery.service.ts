import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { errorFields } from 'src/common/logging/error-fields';
import { APP_CONFIG, AppConfig } from 'src/config/config';
import { AuditService } from 'src/modules/audit/audit.service';
import {
  CLAIM_LIMIT, CLAIM_MIN, claimable, FAIR_MS, FAST_MS, held, Lane, MAX_HELD, MAX_IN_FLIGHT, MAX_PER_ENDPOINT, newLane, QUEUE_MAX_MS, room,
} from 'src/modules/notifications/delivery-lanes';
import { DeliveryWaker } from 'src/modules/notifications/delivery-waker';
import { OutboxMessage } from 'src/modules/notifications/events';
import { DeliveryState } from 'src/modules/notifications/entities/notification-delivery.entity';
import { AttemptRecord, ClaimedDelivery, NotificationMessagesRepository } from 'src/modules/notifications/notification-messages.repository';
import { NotificationEndpointsRepository } from 'src/modules/notifications/notification-endpoints.repository';
import { OutboxService } from 'src/modules/notifications/outbox.service';
import { signatureHeader } from 'src/modules/notifications/signature';
import { slackBody } from 'src/modules/notifications/slack';
import { PostOutcome, WebhookPoster } from 'src/modules/notifications/webhook-post';
import { Transactions } from 'src/database/transactions';

/** Attempts settled by one statement at most (those that finished while the previous one ran). */
const SETTLE_BATCH = 128;
/** A claim outlives its attempt's bound by this much; a replica that died mid-attempt releases its claims after it. */
const LEASE_SLACK_MS = 30_000;

type Next = { state: DeliveryState; nextAttemptAt: Date | null };

/**
 * Delivers the outbox to endpoints: claims due deliveries (`FOR UPDATE SKIP LOCKED` and a lease, so
 * replicas never attempt one delivery at once), POSTs each signed message without waiting for the
 * others, logs the attempt, schedules the retry or settles the delivery, and disables an endpoint
 * that answers 410 or has failed without a success for `NOTIFY_DISABLE_AFTER_S`. Claims, POSTs and
 * records are pipelined: a POST slot is reused as soon as its receiver answers, while the record
 * of that attempt commits with others (group commit) and the next deliveries were claimed ahead.
 */
@Injectable()
export class DeliveryService implements OnApplicationShutdown {
  private readonly logger = new Logger('notifications');
  private readonly poster: WebhookPoster;
  private readonly lanes = new Map<string, Lane>();
  /** Lanes with queued deliveries. */
  private readonly waiting = new Set<string>();
  private posting = 0;
  private held = 0;
  // Not singleFlight: a wake during a pass must run another pass after it, not be dropped.
  private passing = false;
  /** Due rows of any endpoint may wait (a commit, the tick): the next claim looks at every endpoint. */
  private woken = false;
  /** While an endpoint with a backlog is hidden, when a wake's claim may next run. */
  private fairAt = 0;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly settling: { attempt: AttemptRecord; next: Next; done: (failingSince: Date | null, error?: unknown) => void }[] = [];
  private flushing = false;

  constructor(
    private readonly messages: NotificationMessagesRepository,
    private readonly endpoints: NotificationEndpointsRepository,
    private readonly outbox: OutboxService,
    private readonly audit: AuditService,
    private readonly transactions: Transactions,
    waker: DeliveryWaker,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    this.poster = new WebhookPoster(config.notify.timeoutMs, config.notify.allowPrivateTargets);
    waker.onWake(() => this.wake());
  }

  onApplicationShutdown(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.poster.close();
    // What was claimed and never started goes back at once (not after the lease).
    for (const id of this.waiting) this.release(this.lanes.get(id)!, (l) => l.queue.splice(0));
  }

  /** Retries come due with time; a commit on this process wakes delivery at once (DeliveryWaker). */
  @Interval('notification-delivery', 1000)
  tick(): void {
    this.pump();
    this.wake();
  }

  /** Looks for due deliveries of every endpoint now (or after the claim under way). */
  wake(): void {
    this.woken = true;
    void this.pass();
  }

  /**
   * Claims while there is something to claim (passes never overlap): on a wake (a commit on this
   * process, or the tick), every endpoint's due rows; else refills for the lanes that filled their
   * room and have room again. Rows are claimed oldest due first, so an endpoint with a backlog
   * fills its room and hides the rows of others behind its own: a claim that leaves it out reads
   * each other endpoint's due rows by endpoint (it no longer walks past that backlog); while one is
   * hidden (not claimable) a wake's claim still runs every FAIR_MS at most.
   */
  private async pass(): Promise<void> {
    if (this.passing) return;
    this.passing = true;
    try {
      for (;;) {
        let limit = Math.min(CLAIM_LIMIT, MAX_HELD - this.held);
        if (limit < CLAIM_MIN || this.posting >= MAX_IN_FLIGHT || this.stopped) break;
        const lanes = [...this.lanes.values()];
        const hidden = lanes.some((l) => l.more && !claimable(l));
        const discover = this.woken && (!hidden || Date.now() >= this.fairAt);
        if (this.woken && !discover) this.later(this.fairAt - Date.now());
        if (!discover && !lanes.some((l) => l.more && claimable(l))) break;
        if (discover) {
          this.woken = false;
          if (hidden) this.fairAt = Date.now() + FAIR_MS;
        }
        const busy: string[] = [];
        const rooms = new Map<string, number>();
        let wanted = 0;
        for (const [id, lane] of this.lanes) {
          if (claimable(lane)) rooms.set(id, room(lane));
          else busy.push(id);
          if (claimable(lane) && lane.more) wanted += room(lane);
        }
        // A refill locks no more rows than the rooms it fills (others' rows it meets are taken too).
        if (!discover) limit = Math.min(limit, Math.max(wanted, CLAIM_MIN));
        const now = new Date();
        const until = new Date(now.getTime() + this.config.notify.timeoutMs + LEASE_SLACK_MS);
        const claimed = await this.messages.claim(now, until, busy, rooms, MAX_PER_ENDPOINT, limit);
        const at = Date.now();
        const got = new Map<string, number>();
        for (const delivery of claimed) {
          const lane = this.lane(delivery.endpoint_id);
          if (lane.queue.length === 0) this.waiting.add(delivery.endpoint_id);
          lane.queue.push({ delivery, claimedAt: at });
          this.held++;
          got.set(delivery.endpoint_id, (got.get(delivery.endpoint_id) ?? 0) + 1);
        }
        // More may be due for a lane that filled its room, or took rows of a claim stopped by its limit.
        const cut = claimed.length > 0 && claimed[0].scanned >= limit;
        let filled = false;
        for (const [id, lane] of this.lanes) {
          const n = got.get(id) ?? 0;
          const full = n >= (rooms.get(id) ?? MAX_PER_ENDPOINT);
          filled ||= full;
          if (n > 0 || rooms.has(id)) lane.more = full || (cut ? n > 0 || lane.more : false);
        }
        this.pump();
        // Stopped by the limit, not by a room: go on at once (behind a filled room, the next wake's claim finds them).
        if (cut && !filled) this.woken = true;
      }
    } catch (error) {
      this.logger.warn({ msg: 'notification delivery pass failed', ...errorFields(error) });
    } finally {
      this.passing = false;
    }
  }

  /** Runs a pass after `ms` (a wake's claim deferred by FAIR_MS), once. */
  private later(ms: number): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.pass();
    }, Math.max(ms, 1));
    this.timer.unref();
  }

  private lane(id: string): Lane {
    let lane = this.lanes.get(id);
    if (!lane) this.lanes.set(id, (lane = newLane()));
    return lane;
  }

  /** Starts queued deliveries while POST slots are free; a delivery queued too long is released instead. */
  private pump(): void {
    const now = Date.now();
    for (const id of this.waiting) {
      const lane = this.lanes.get(id)!;
      const stale = lane.queue.findIndex((q) => now - q.claimedAt <= QUEUE_MAX_MS);
      if (stale !== 0) this.release(lane, (l) => l.queue.splice(0, stale === -1 ? l.queue.length : stale));
      while (lane.queue.length > 0 && lane.posting < MAX_PER_ENDPOINT && this.posting < MAX_IN_FLIGHT && !this.stopped) {
        this.start(lane, lane.queue.shift()!.delivery);
      }
      if (lane.queue.length === 0) this.waiting.delete(id);
      if (this.posting >= MAX_IN_FLIGHT) break;
    }
  }

  /** Gives deliveries back unattempted (their claim cleared), e.g. to an endpoint that answered 410. */
  private release(lane: Lane, take: (l: Lane) => { delivery: ClaimedDelivery }[]): void {
    const taken = take(lane);
    if (taken.length === 0) return;
    this.held -= taken.length;
    this.forget(taken[0].delivery.endpoint_id, lane);
    this.messages
      .release(taken.map((q) => q.delivery))
      .catch((error: unknown) => this.logger.warn({ msg: 'notification claims not released (they lapse with the lease)', ...errorFields(error) }));
  }

  private forget(id: string, lane: Lane): void {
    if (lane.queue.length === 0) this.waiting.delete(id);
    if (held(lane) === 0) this.lanes.delete(id);
  }

  private start(lane: Lane, d: ClaimedDelivery): void {
    lane.posting++;
    this.posting++;
    let answered = false;
    const answer = () => {
      if (answered) return;
      answered = true;
      lane.posting--;
      this.posting--;
      lane.settling++;
    };
    const started = new Date();
    this.post(d, started)
      .then((outcome) => {
        answer();
        lane.fast = outcome.error === null && Date.now() - started.getTime() < FAST_MS;
        if (outcome.responseStatus === 410 && !lane.gone) {
          lane.gone = true;
          this.release(lane, (l) => l.queue.splice(0));
        }
        this.pump(); // the slot is free: the next POST starts while this record commits
        return this.record(d, started, outcome);
      })
      .catch((error: unknown) => this.logger.warn({ msg: 'notification attempt not recorded', ...errorFields(error) }))
      .finally(() => {
        answer();
        lane.settling--;
        this.held--;
        this.forget(d.endpoint_id, lane);
        if (this.woken || (lane.more && claimable(lane))) void this.pass();
      });
  }

  private async post(d: ClaimedDelivery, started: Date): Promise<PostOutcome> {
    const body = d.format === 'slack' ? slackBody(JSON.parse(d.body) as OutboxMessage, this.config.webUrl) : d.body;
    const timestamp = Math.floor(started.getTime() / 1000);
    const secrets = d.previous_secret && d.previous_secret_until && d.previous_secret_until > started ? [d.secret, d.previous_secret] : [d.secret];
    return this.poster.post(d.url, d.message_id, String(timestamp), signatureHeader(secrets, d.message_id, timestamp, body), body);
  }

  /** Records the attempt (answered only once its record committed), then disables the endpoint if it must. */
  private async record(d: ClaimedDelivery, started: Date, outcome: PostOutcome): Promise<void> {
    const attempt = d.attempts + 1;
    const succeeded = outcome.error === null;
    const retryIn = this.config.notify.retryScheduleSeconds[attempt - 1];
    const next: Next = succeeded
      ? { state: 'delivered', nextAttemptAt: null }
      : retryIn !== undefined
        ? { state: 'pending', nextAttemptAt: new Date(Date.now() + retryIn * 1000) }
        : { state: 'failed', nextAttemptAt: null };
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
    const failingFor = failingSince ? Date.now() - failingSince.getTime() : 0;
    if (outcome.responseStatus === 410) await this.disable(d, 'gone');
    else if (!succeeded && failingSince && failingFor >= this.config.notify.disableAfterSeconds * 1000) await this.disable(d, 'failing');
  }

  /**
   * Group commit: an attempt's record waits while a settle statement runs, and the attempts that
   * finished meanwhile are written together by the next one (each attempt is answered only after
   * its own record committed; a crash before that leaves the claim to lapse and the attempt to be
   * made again, as with one write per attempt). Answers since when the endpoint has been failing.
   */
  private settle(attempt: AttemptRecord, next: Next): Promise<Date | null> {
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
    await this.transactions.run(async (tx) => {
      const row = await this.endpoints.disable(tx.manager, d.endpoint_id, reason);
      if (!row) return;
      await this.audit.record(tx, { workspaceId: row.workspaceId, actor: null, action: 'notification_endpoint.disable', target: row.id, detail: { reason } });
      await this.outbox.emit(tx, row.workspaceId, 'notification_endpoint.disabled', { endpoint_id: row.id, reason });
    });
  }
}
