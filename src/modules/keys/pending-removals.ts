import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Client, Notification } from 'pg';
import type { RedisClientType } from 'redis';
import { errorFields } from 'src/common/logging/error-fields';
import { APP_CONFIG, AppConfig } from 'src/config/config';
import { REDIS } from 'src/database/redis.module';
import { VirtualKeyRemovalsRepository } from 'src/modules/keys/virtual-key-removals.repository';

/** How often the listener sends itself a marker through PostgreSQL's notification queue. */
export const MARKER_INTERVAL_MS = 100;
/**
 * How long a marker's round trip vouches for this replica's set (docs/decisions.md): the Redis copy
 * is served only while the last marker received was sent less than this ago, and a revoke or
 * rotation whose Redis delete failed answers only this long after its commit.
 */
export const FRESH_MS = 1000;
/** A marker without an answer for this long: the connection is taken as dead and replaced. */
const MARKER_TIMEOUT_MS = 5000;
const RECONNECT_MS = [200, 500, 1000, 2000];

/**
 * Every replica's copy of the digests whose hot-path removal has not landed: the digests of keys
 * still `hot_path_pending` and every digest with a `virtual_key_removals` row. Loaded at start and
 * kept current by the notifications the recording transactions send (migration 1763769700000) on a
 * connection of its own; the internal key lookup serves the Redis copy of a digest only when
 * `servable` says so, and reads PostgreSQL otherwise (the argument: docs/decisions.md).
 *
 * Freshness is proved by markers: every MARKER_INTERVAL_MS the listener notifies a channel of its
 * own; PostgreSQL delivers notifications in commit order, so once a marker sent at `s` comes back,
 * every notification committed before `s` has been applied. While none came back within FRESH_MS
 * (connection down, reconnecting, loading, or an event loop too busy to read it) nothing is servable.
 */
@Injectable()
export class PendingRemovals implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('keys');
  /** Listening needs a connection beside the pool and a shared Redis: off for PGlite (one connection) and the in-process hot path. */
  readonly enabled: boolean;
  /** This replica's marker channel, also the listener's `application_name`. */
  readonly channel = `key_hot_path_${randomBytes(6).toString('hex')}`;
  private readonly removals = new Set<string>();
  private readonly pendingKeys = new Map<string, string[]>();
  private readonly pendingDigests = new Set<string>();
  /** `performance.now()` at which the last marker that came back was sent. */
  private confirmedAt = -Infinity;
  private client: Client | null = null;
  /** Notifications received while the set loads, replayed in order once it is loaded; null once loaded. */
  private backlog: string[] | null = null;
  /** Markers sent and not yet back: sequence number -> `performance.now()` when sent. */
  private readonly markers = new Map<number, number>();
  private sequence = 0;
  private timer: NodeJS.Timeout | null = null;
  private attempts = 0;
  private stopped = false;
  private loggedDown = false;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(REDIS) redis: RedisClientType | null,
    private readonly removalsRepository: VirtualKeyRemovalsRepository,
  ) {
    this.enabled = redis !== null && config.databasePoolSize > 1;
  }

  onApplicationBootstrap(): void {
    if (!this.enabled) return;
    void this.connect();
    this.timer = setInterval(() => this.mark(), MARKER_INTERVAL_MS);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.drop();
  }

  /** Whether the Redis copy of `digest` may be answered now (see the class comment). */
  servable(digest: string): boolean {
    return performance.now() - this.confirmedAt < FRESH_MS && !this.pendingDigests.has(digest) && !this.removals.has(digest);
  }

  /**
   * After a commit whose Redis delete did not land: returns once no replica can still serve the
   * removed digest from Redis, i.e. once any replica serving Redis has had a marker sent after that
   * commit come back (FRESH_MS). Immediate when listening is off (every lookup then reads PostgreSQL).
   */
  async outwait(): Promise<void> {
    if (this.enabled) await new Promise((resolve) => setTimeout(resolve, FRESH_MS));
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    const client = new Client({ connectionString: this.config.databaseUrl, application_name: this.channel });
    this.client = client;
    this.backlog = [];
    client.on('notification', (message) => this.receive(message));
    client.on('error', () => this.lost(client));
    client.on('end', () => this.lost(client));
    try {
      await client.connect();
      await this.removalsRepository.listen(client, this.channel);
      // Listening before reading: a change committed in between is both read and replayed, in commit order.
      const rows = await this.removalsRepository.pendingDigests(client);
      if (this.client !== client) return;
      this.removals.clear();
      this.pendingKeys.clear();
      this.pendingDigests.clear();
      for (const row of rows) {
        if (row.kind === 'r') this.removals.add(row.digest);
        else this.setPending(row.key_id!, [row.digest, ...(row.previous ? [row.previous] : [])]);
      }
      const backlog = this.backlog ?? [];
      this.backlog = null;
      for (const payload of backlog) this.apply(payload);
      this.attempts = 0;
      if (this.loggedDown) this.logger.log({ msg: 'key hot-path listener connected again' });
      this.loggedDown = false;
      this.mark();
    } catch (error) {
      if (!this.loggedDown) this.logger.warn({ msg: 'key hot-path listener unavailable; key lookups read PostgreSQL', ...errorFields(error) });
      this.loggedDown = true;
      this.lost(client);
    }
  }

  /** The connection failed or ended: nothing is servable until a new one has loaded and a marker came back. */
  private lost(client: Client): void {
    if (this.client !== client) return;
    this.client = null;
    this.backlog = null;
    this.confirmedAt = -Infinity;
    this.markers.clear();
    client.removeAllListeners('notification');
    client.on('error', () => undefined);
    void client.end().catch(() => undefined);
    if (this.stopped) return;
    const delay = RECONNECT_MS[Math.min(this.attempts++, RECONNECT_MS.length - 1)];
    setTimeout(() => void this.connect(), delay).unref();
  }

  private async drop(): Promise<void> {
    const client = this.client;
    this.client = null;
    this.confirmedAt = -Infinity;
    if (client) await client.end().catch(() => undefined);
  }

  /** Sends the next marker, unless one is on its way; replaces a connection whose marker never came back. */
  private mark(): void {
    const client = this.client;
    // No marker before the set is loaded: one answered earlier would vouch for a set not yet there.
    if (!client || this.backlog !== null || this.stopped) return;
    const oldest = this.markers.values().next();
    if (!oldest.done) {
      if (performance.now() - oldest.value > MARKER_TIMEOUT_MS) this.lost(client);
      return;
    }
    const sequence = ++this.sequence;
    this.markers.set(sequence, performance.now());
    this.removalsRepository.mark(client, this.channel, sequence).catch(() => this.lost(client));
  }

  private receive(message: Notification): void {
    const payload = message.payload ?? '';
    if (message.channel === this.channel) {
      const sentAt = this.markers.get(Number(payload));
      if (sentAt === undefined) return;
      this.markers.delete(Number(payload));
      if (sentAt > this.confirmedAt) this.confirmedAt = sentAt;
    } else if (this.backlog) {
      this.backlog.push(payload);
    } else {
      this.apply(payload);
    }
  }

  private apply(payload: string): void {
    const [kind, subject, state, ...digests] = payload.split(' ');
    if (kind === 'r') {
      if (state === '1') this.removals.add(subject);
      else this.removals.delete(subject);
    } else if (kind === 'k') {
      this.setPending(subject, state === '1' ? digests : []);
    }
  }

  /** The key's pending digests become `digests` (none: no longer pending). A digest belongs to one key only. */
  private setPending(keyId: string, digests: string[]): void {
    for (const digest of this.pendingKeys.get(keyId) ?? []) this.pendingDigests.delete(digest);
    if (digests.length === 0) {
      this.pendingKeys.delete(keyId);
      return;
    }
    this.pendingKeys.set(keyId, digests);
    for (const digest of digests) this.pendingDigests.add(digest);
  }
}
