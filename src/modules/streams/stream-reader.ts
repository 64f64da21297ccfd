import { Inject, Injectable } from '@nestjs/common';
import { hostname } from 'node:os';
import { APP_CONFIG, AppConfig } from 'src/config/config';
import { createRedis, REDIS, Redis, redisConnected, REDIS_TIMEOUT_MS, sendRaw } from 'src/database/redis.module';
import { RawEntry, ReadBudget } from 'src/modules/streams/read-budget';
import { BATCH_LIMIT, CLAIM_IDLE_MS, GROUP, PassOptions, StreamName } from 'src/modules/streams/stream-projector';

/** What one read of a stream brought in, within the pass's entry limit and byte budget. */
export interface StreamRead {
  redis: Redis;
  key: string;
  claimed: RawEntry[];
  fresh: RawEntry[];
  bytes: number;
  /** Whether the read stopped at its entry or byte limit (more may be waiting). */
  full: boolean;
}

/**
 * Reads and claims the gateway streams (CONTRACT.md 4.4) for group `control` on a Redis connection
 * of its own, and acknowledges what was projected or parked.
 */
@Injectable()
export class StreamReader {
  private readonly groupsReady = new Set<StreamName>();
  /** Per stream, the largest entry the previous pass read: the size its first read is planned for. */
  private readonly largestEntry = new Map<StreamName, number>();
  /**
   * Per stream, the id of the last entry admitted by a pass that read entries past its byte
   * budget: those are pending with this consumer, and the next pass reads them first.
   */
  private readonly readPast = new Map<StreamName, string>();
  private readonly consumer = hostname();
  private connection: Redis | null = null;

  constructor(
    @Inject(REDIS) private readonly redis: Redis | null,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /** Whether streams are enabled (REDIS_URL set). */
  get enabled(): boolean {
    return this.redis !== null;
  }

  streamKey(stream: StreamName): string {
    return `${this.config.redisPrefix}:${stream}`;
  }

  /** Where the XAUTOCLAIM scan of this stream, group and consumer resumes. */
  claimPositionKey(stream: StreamName): string {
    return `${this.config.redisPrefix}:${stream}:autoclaim:${GROUP}:${this.consumer}`;
  }

  /** Entries delivered to group `control` and not yet acknowledged (on the main connection). */
  async pendingCount(stream: StreamName): Promise<number> {
    return (await this.redis!.xPending(this.streamKey(stream), GROUP)).pending;
  }

  /** XINFO GROUPS `lag` (Redis 7): entries added after the group's last delivered id. */
  async lag(stream: StreamName): Promise<number> {
    const group = (await this.redis!.xInfoGroups(this.streamKey(stream))).find((g) => g.name === GROUP);
    return Number(group?.lag ?? 0);
  }

  /**
   * Reads one batch in READ_CHUNK pieces, each sized to the bytes left, until the entry limit or the
   * byte budget is reached: first stale entries of any consumer (XAUTOCLAIM pages from the persisted
   * scan position), then the entries this consumer read past the budget of its previous pass, then
   * new ones. Entries a read brought in past the budget are dropped at once: they stay pending with
   * this consumer, new ones are read again by the next pass, reclaimed ones by the next reclaim
   * (after the claim idle time). Null when streams are disabled.
   */
  async read(stream: StreamName, options: PassOptions): Promise<StreamRead | null> {
    const redis = this.streamConnection();
    if (!redis) return null;
    const key = this.streamKey(stream);
    await redisConnected(redis);
    await this.ensureGroup(redis, stream);
    const budget = new ReadBudget(options.batchLimit ?? BATCH_LIMIT, options.batchBytes ?? this.config.streamBatchMaxBytes, this.largestEntry.get(stream) ?? 0);

    const positionKey = this.claimPositionKey(stream);
    let position = (await redis.get(positionKey)) ?? '0-0';
    const claimed: RawEntry[] = [];
    // Raw replies (sendCommand): node-redis's xAutoClaim and xReadGroup copy every entry into an
    // object, ~0.4 ms of CPU per 1,000 entries (bench/README.md), and the consumer reads one field.
    for (;;) {
      const count = budget.nextCount();
      let page: RawEntry[];
      try {
        const idle = String(options.claimIdleMs ?? CLAIM_IDLE_MS);
        [position, page] = await sendRaw<[string, RawEntry[]]>(redis, key, ['XAUTOCLAIM', key, GROUP, this.consumer, idle, position, 'COUNT', String(count)]);
      } catch (error) {
        // The stream or its group vanished (Redis restarted empty): create them again on the next pass.
        if (error instanceof Error && error.message.startsWith('NOGROUP')) this.groupsReady.delete(stream);
        throw error;
      }
      claimed.push(...budget.take(page));
      // A short page: the scan found no more stale entries within its reach this time.
      if (page.length < count || budget.full || position === '0-0') break;
    }
    await redis.set(positionKey, position);

    const fresh: RawEntry[] = [];
    while (!budget.full) {
      const after = this.readPast.get(stream);
      const count = budget.nextCount();
      const reply = await sendRaw<[string, RawEntry[]][] | null>(redis, key, ['XREADGROUP', 'GROUP', GROUP, this.consumer, 'COUNT', String(count), 'STREAMS', key, after ?? '>']);
      const read = reply?.[0]?.[1] ?? [];
      const taken = budget.take(read);
      fresh.push(...taken);
      if (taken.length < read.length || (after !== undefined && read.length === count)) this.readPast.set(stream, taken[taken.length - 1][0]);
      else if (after !== undefined) this.readPast.delete(stream);
      else if (read.length < count) break;
    }
    this.largestEntry.set(stream, budget.largest);
    return { redis, key, claimed, fresh, bytes: budget.bytes, full: budget.full };
  }

  async ack(redis: Redis, key: string, ids: string[]): Promise<void> {
    await redis.xAck(key, GROUP, ids);
  }

  close(): void {
    this.connection?.destroy();
  }

  /**
   * A connection of its own, so large stream replies never delay the hot path's commands. Unlike
   * an operator request, a pass may wait for the connection: its commands queue while it is down,
   * for at most REDIS_TIMEOUT_MS each (node-redis's `timeout` counts until a command is written),
   * so a pass during an outage fails and the next one retries.
   */
  private streamConnection(): Redis | null {
    if (!this.redis) return null;
    if (!this.connection) {
      // The main connection logs the outage; a pass that fails logs `stream pass failed`.
      this.connection = createRedis(this.config, { offlineQueue: true, commandTimeout: REDIS_TIMEOUT_MS, logOutages: false });
    }
    return this.connection;
  }

  private async ensureGroup(redis: Redis, stream: StreamName): Promise<void> {
    if (this.groupsReady.has(stream)) return;
    try {
      await redis.xGroupCreate(this.streamKey(stream), GROUP, '0', { MKSTREAM: true });
    } catch (error) {
      if (!(error instanceof Error && error.message.startsWith('BUSYGROUP'))) throw error;
    }
    this.groupsReady.add(stream);
  }
}
