import { inTransaction, Tx } from 'src/database/transaction';
import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { hostname } from 'node:os';
import { DataSource, EntityManager, QueryRunner } from 'typeorm';
import { APP_CONFIG, AppConfig } from 'src/config/config';
import { allowLongerStatements } from 'src/database/bounded-driver';
import { createRedis, REDIS, Redis, redisConnected, REDIS_TIMEOUT_MS, redisDeadline, sendRaw } from 'src/database/redis.module';
import { EntryReader, MalformedEntry } from 'src/modules/streams/entry-reader';
import { RawEntry, ReadBudget } from 'src/modules/streams/read-budget';
import { MetricsService } from 'src/platform/metrics/metrics.service';
import { errorFields } from 'src/common/logging/error-fields';
import { WorkspacesService } from 'src/modules/workspaces/workspaces.service';

export type StreamName = 'receipts' | 'usage';

/** One well-formed entry, ready to project. */
export interface ParsedEntry<T> {
  id: string;
  workspaceId: string;
  value: T;
  /** The partition key of the row it writes (its month must have a partition), or null. */
  partitionTime: Date | null;
}

/** A malformed entry: kept in `stream_parked`, acknowledged, never retried. */
export interface ParkedEntry {
  id: string;
  workspaceId: string | null;
  reason: string;
}

/** What a read model plugs into the consumer. */
export interface StreamProjector<T> {
  stream: StreamName;
  /** The month-partitioned table its rows go to. */
  partitioned: string;
  /** Reads one entry; throws MalformedEntry. */
  parse(reader: EntryReader): Omit<ParsedEntry<T>, 'id'>;
  /** Projects entries (any mix of workspaces) inside the caller's transaction (`tx`, for after-commit work); must be idempotent. */
  project(manager: EntityManager, entries: ParsedEntry<T>[], tx?: Tx): Promise<void>;
  /** Records what parking loses (usage gaps), in the transaction that parks. */
  parked?(manager: EntityManager, entries: ParkedEntry[]): Promise<void>;
  /**
   * Deletes at most `limit` non-partitioned rows of one workspace older than `cutoff` (partitions
   * are dropped by the consumer) in the caller's transaction; answers how many it deleted.
   */
  retain(manager: EntityManager, workspaceId: string, cutoff: Date, limit: number): Promise<number>;
}

/** What a maintenance run did: the partitions it dropped, and the steps that failed (each logged). */
export interface MaintenanceResult {
  dropped: string[];
  failed: string[];
}

export interface PassOptions {
  /** Most entries admitted in one pass, reclaimed and fresh together. */
  batchLimit?: number;
  /** Most bytes of entry data admitted in one pass (the entry that reaches it is the last); default STREAM_BATCH_MAX_BYTES. */
  batchBytes?: number;
  /** How long an entry must have been pending before it is reclaimed from its consumer. */
  claimIdleMs?: number;
  /** How many transactions project a batch concurrently, each over its own set of workspaces. */
  shards?: number;
}

export interface PassResult {
  reclaimed: number;
  fresh: number;
  projected: number;
  parked: number;
  /** Entries of workspace batches that rolled back; they stay pending and are reclaimed later. */
  failed: number;
  /** Bytes of entry data the pass admitted (see `entrySize`). */
  bytes: number;
}

export const GROUP = 'control';
export const BATCH_LIMIT = 20_000;
/** Concurrent projection transactions per batch (PostgreSQL does the work; one per core or so). */
export const PROJECT_SHARDS = 3;
export const CLAIM_IDLE_MS = 60_000;
export const CONSUME_INTERVAL_MS = 250;
export const MAINTENANCE_INTERVAL_MS = 3_600_000;
/** The statement bound of maintenance steps, above DATABASE_STATEMENT_TIMEOUT_MS: a concurrent detach waits for every transaction that still sees the partition. */
export const MAINTENANCE_STATEMENT_TIMEOUT_MS = 120_000;
/**
 * Most rows one retention transaction deletes: it holds the receipt counter row of its workspace,
 * which every ingestion batch of that workspace updates, until it commits.
 */
export const RETENTION_BATCH = 5_000;
/** Workspaces read per page while retention walks them. */
const RETENTION_PAGE = 500;
/** Entries dated further ahead than this are parked (a partition is never created for them). */
const FUTURE_SKEW_MS = 86_400_000;
const PARKED_DATA_MAX = 65_536;

/** A batch read and parsed, its malformed entries already parked, waiting to be projected. */
interface AdmittedBatch {
  projector: StreamProjector<unknown>;
  redis: Redis;
  key: string;
  reclaimed: number;
  fresh: number;
  parked: number;
  bytes: number;
  /** Whether the pass stopped at its entry or byte limit (more may be waiting). */
  full: boolean;
  valid: ParsedEntry<unknown>[];
}

export const monthStart = (at: Date, offset = 0) => new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + offset, 1));
const monthKey = (at: Date) => monthStart(at).toISOString().slice(0, 7);

/** One date in each distinct month of the entries' partition keys. */
function monthsOf(entries: ParsedEntry<unknown>[]): Date[] {
  const months = new Map<number, Date>();
  for (const { partitionTime: at } of entries) if (at) months.set(at.getUTCFullYear() * 12 + at.getUTCMonth(), at);
  return [...months.values()];
}

/** PostgreSQL refused a row because no partition of the table covers it (23514 from tuple routing). */
function isMissingPartition(error: unknown): boolean {
  const e = error as { driverError?: { code?: string; message?: string } };
  return e?.driverError?.code === '23514' && /^no partition of relation/.test(e.driverError.message ?? '');
}

/**
 * Deals whole workspaces to at most `count` shards, largest first onto the lightest shard, so
 * the shards carry about the same number of entries and never share a workspace.
 */
export function shardWorkspaces<E>(groups: Map<string, E[]>, count: number): [string, E[]][][] {
  const shards = Array.from({ length: Math.max(1, Math.min(count, groups.size)) }, () => ({ size: 0, groups: [] as [string, E[]][] }));
  for (const group of [...groups].sort((a, b) => b[1].length - a[1].length || (a[0] < b[0] ? -1 : 1))) {
    const lightest = shards.reduce((min, s) => (s.size < min.size ? s : min));
    lightest.groups.push(group);
    lightest.size += group[1].length;
  }
  return shards.filter((s) => s.groups.length > 0).map((s) => s.groups);
}

/**
 * The consumer of the gateway streams (CONTRACT.md 4.4) for every registered read model: one
 * pass reclaims stale pending entries in bounded XAUTOCLAIM pages (its scan position persisted
 * per stream, group and consumer), tops up with fresh entries to at most the entry limit and the
 * byte budget, parks malformed entries, projects the rest in concurrent shard transactions
 * (falling back to one transaction per workspace, so a failing workspace keeps only its own
 * entries pending) and acknowledges what was committed. Transport is at-least-once; projections
 * are idempotent. It also keeps the month partitions and retention (`maintain`).
 */
@Injectable()
export class StreamsService implements OnApplicationShutdown {
  private readonly logger = new Logger('streams');
  private readonly projectors = new Map<StreamName, StreamProjector<unknown>>();
  private readonly groupsReady = new Set<StreamName>();
  private readonly partitions = new Set<string>();
  /** Per stream, the largest entry the previous pass read: the size its first read is planned for. */
  private readonly largestEntry = new Map<StreamName, number>();
  /**
   * Per stream, the id of the last entry admitted by a pass that read entries past its byte
   * budget: those are pending with this consumer, and the next pass reads them first.
   */
  private readonly readPast = new Map<StreamName, string>();
  private readonly consumer = hostname();
  private connection: Redis | null = null;
  private running: Promise<void> | null = null;
  private stopping = false;

  constructor(
    private readonly dataSource: DataSource,
    @Inject(REDIS) private readonly redis: Redis | null,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly metrics: MetricsService,
    private readonly workspaces: WorkspacesService,
  ) {
    metrics.gauge('control_stream_pending', 'Entries delivered to group control and not yet acknowledged', () => this.perStream((key) => this.pendingCount(key)), 'stream');
    metrics.gauge('control_stream_lag', 'Entries of the stream not yet delivered to group control', () => this.perStream((key) => this.lag(key)), 'stream');
  }

  private async perStream(read: (key: string) => Promise<number>): Promise<Record<string, number>> {
    const out: Record<string, number> = {};
    if (!this.redis) return out;
    for (const stream of this.projectors.keys()) out[stream] = await redisDeadline(read(this.streamKey(stream))).catch(() => 0);
    return out;
  }

  /**
   * Entries delivered to group `control` and not yet acknowledged, per registered stream (0 before
   * the group exists); throws when Redis does not answer. Empty without Redis.
   */
  async pendingBacklog(): Promise<Partial<Record<StreamName, number>>> {
    const out: Partial<Record<StreamName, number>> = {};
    if (!this.redis) return out;
    for (const stream of this.projectors.keys()) {
      out[stream] = await this.pendingCount(this.streamKey(stream)).catch((error: unknown) => {
        if (error instanceof Error && error.message.startsWith('NOGROUP')) return 0;
        throw error;
      });
    }
    return out;
  }

  private async pendingCount(key: string): Promise<number> {
    return (await this.redis!.xPending(key, GROUP)).pending;
  }

  /** XINFO GROUPS `lag` (Redis 7): entries added after the group's last delivered id. */
  private async lag(key: string): Promise<number> {
    const group = (await this.redis!.xInfoGroups(key)).find((g) => g.name === GROUP);
    return Number(group?.lag ?? 0);
  }

  register<T>(projector: StreamProjector<T>): void {
    if (this.projectors.has(projector.stream)) throw new Error(`stream ${projector.stream} registered twice`);
    this.projectors.set(projector.stream, projector as StreamProjector<unknown>);
  }

  streamKey(stream: StreamName): string {
    return `${this.config.redisPrefix}:${stream}`;
  }

  /** Where the XAUTOCLAIM scan of this stream, group and consumer resumes. */
  claimPositionKey(stream: StreamName): string {
    return `${this.config.redisPrefix}:${stream}:autoclaim:${GROUP}:${this.consumer}`;
  }

  /** One consumption pass over `stream`; null when streams are disabled (no REDIS_URL). */
  async pass(stream: StreamName, options: PassOptions = {}): Promise<PassResult | null> {
    const batch = await this.admit(stream, options);
    return batch && this.commit(batch, options);
  }

  /** Runs passes over every stream (the streams concurrently) until each is drained; answers the entries projected. */
  async drain(options: PassOptions = {}): Promise<number> {
    // Settled together, so a failing stream never leaves the other one running behind the job's back.
    const outcomes = await Promise.allSettled([...this.projectors.keys()].map((stream) => this.drainStream(stream, options)));
    let projected = 0;
    for (const outcome of outcomes) {
      if (outcome.status === 'rejected') throw outcome.reason;
      projected += outcome.value;
    }
    return projected;
  }

  /**
   * Passes over one stream until one comes back short. The next batch is read, parsed and its
   * malformed entries parked while the current one is projected; batches still commit (and are
   * acknowledged) one after the other, in stream order. If a commit throws, the batch read ahead
   * stays pending and is reclaimed after the idle time, as after a crash.
   */
  private async drainStream(stream: StreamName, options: PassOptions): Promise<number> {
    let projected = 0;
    let next: Promise<AdmittedBatch | null> | null = this.stopping ? null : this.admit(stream, options);
    while (next) {
      const batch = await next;
      if (!batch) break;
      next = batch.full && !this.stopping ? this.admit(stream, options) : null;
      // Handled here already (a rejection while the commit runs is not unhandled); awaited below.
      next?.catch(() => undefined);
      try {
        projected += (await this.commit(batch, options)).projected;
      } catch (error) {
        await next?.catch(() => undefined);
        throw error;
      }
    }
    return projected;
  }

  /**
   * Reads one batch, parses it and parks what is malformed. Reads come in READ_CHUNK pieces, each
   * sized to the bytes left, until the entry limit or the byte budget is reached: first stale
   * entries of any consumer (XAUTOCLAIM pages from the persisted scan position), then the entries
   * this consumer read past the budget of its previous pass, then new ones. Entries a read brought
   * in past the budget are dropped at once: they stay pending with this consumer, new ones are
   * read again by the next pass, reclaimed ones by the next reclaim (after the claim idle time).
   */
  private async admit(stream: StreamName, options: PassOptions): Promise<AdmittedBatch | null> {
    const projector = this.projectors.get(stream);
    const redis = this.streamConnection();
    if (!projector || !redis) return null;
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
        [position, page] = await sendRaw<[string, RawEntry[]]>(redis, key, ['XAUTOCLAIM', key, GROUP, this.consumer, String(options.claimIdleMs ?? CLAIM_IDLE_MS), position, 'COUNT', String(count)]);
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

    const { valid, parked } = await this.parse(projector, redis, key, [...claimed, ...fresh]);
    return { projector, redis, key, reclaimed: claimed.length, fresh: fresh.length, parked, bytes: budget.bytes, full: budget.full, valid };
  }

  @Interval(CONSUME_INTERVAL_MS)
  async tick(): Promise<void> {
    if (this.running || this.stopping) return;
    this.running = this.drain()
      .then(() => undefined)
      .catch((error: unknown) => this.logger.warn({ msg: 'stream pass failed', ...errorFields(error) }))
      .finally(() => (this.running = null));
    await this.running;
  }

  /**
   * Creates the partitions of this month and the next two, then applies retention: partitions of
   * months before the cutoff are detached concurrently and dropped, and each read model deletes its
   * older rows workspace by workspace. Every step is its own short transaction (or, for the
   * detach, none), so a failing step undoes nothing another step did and never leaves the
   * partition cache listing a partition that does not exist; a failed step is logged, named in
   * `failed`, and the other steps still run (the next run retries). One replica at a time
   * (session-level advisory lock): null when another holds it.
   */
  async maintain(now = new Date()): Promise<MaintenanceResult | null> {
    // A session lock on a connection of its own, not a transaction kept open: DETACH ... CONCURRENTLY
    // waits for every transaction that could still see the partition, an open one of ours included.
    // Every step runs on that connection (the embedded database has a pool of one).
    const runner = this.dataSource.createQueryRunner();
    await runner.connect();
    try {
      // For the session; reset before the connection returns to the pool.
      await allowLongerStatements(runner, MAINTENANCE_STATEMENT_TIMEOUT_MS, 'session');
      const [{ locked }] = await runner.query(`SELECT pg_try_advisory_lock(hashtext('read_model_maintenance')) AS locked`);
      if (!locked) return null;
      try {
        return await this.maintainSteps(runner, now);
      } finally {
        await runner.query(`SELECT pg_advisory_unlock(hashtext('read_model_maintenance'))`);
      }
    } finally {
      await runner.query('RESET statement_timeout').catch(() => undefined);
      await runner.release();
    }
  }

  private async maintainSteps(runner: QueryRunner, now: Date): Promise<MaintenanceResult> {
    const cutoff = monthStart(now, -this.config.readModelRetentionMonths);
    const result: MaintenanceResult = { dropped: [], failed: [] };
    const step = async (name: string, work: () => Promise<unknown>) => {
      try {
        await work();
      } catch (error) {
        result.failed.push(name);
        this.logger.warn({ msg: 'read model maintenance step failed', step: name, ...errorFields(error) });
      }
    };
    for (const { partitioned } of this.projectors.values()) {
      for (let m = 0; m <= 2; m++) await step(`create ${partitioned} ${monthKey(monthStart(now, m))}`, () => this.createPartition(partitioned, monthStart(now, m), runner));
    }
    for (const { partitioned } of this.projectors.values()) {
      for (const old of await this.partitionsBefore(runner, partitioned, cutoff)) {
        await step(`drop ${old.name}`, async () => {
          this.partitions.delete(`${partitioned}:${old.month}`);
          await this.dropPartition(runner, partitioned, old);
          result.dropped.push(old.name);
        });
      }
    }
    for (const projector of this.projectors.values()) await step(`retain ${projector.stream}`, () => this.retain(runner, projector, cutoff));
    await step('retain stream_parked', () => runner.query(`DELETE FROM stream_parked WHERE parked_at < $1`, [cutoff]));
    return result;
  }

  /**
   * The month tables of `parent` before `cutoff`: attached, pending a detach that was interrupted,
   * or already detached by a run that stopped before dropping them.
   */
  private async partitionsBefore(runner: QueryRunner, parent: string, cutoff: Date): Promise<{ name: string; month: string; attached: boolean; pending: boolean }[]> {
    const tables: { name: string; attached: boolean; pending: boolean }[] = await runner.query(
      `SELECT c.relname AS name, i.inhrelid IS NOT NULL AS attached, coalesce(i.inhdetachpending, false) AS pending
       FROM pg_class c LEFT JOIN pg_inherits i ON i.inhrelid = c.oid AND i.inhparent = $1::regclass
       WHERE c.relkind = 'r' AND c.relnamespace = (SELECT relnamespace FROM pg_class WHERE oid = $1::regclass) AND c.relname ~ ('^' || $1 || '_p[0-9]{6}$')`,
      [parent],
    );
    return tables
      .map((t) => ({ ...t, month: `${t.name.slice(-6, -2)}-${t.name.slice(-2)}` }))
      .filter((t) => Date.parse(`${t.month}-01T00:00:00Z`) < cutoff.getTime())
      .sort((a, b) => (a.name < b.name ? -1 : 1));
  }

  /**
   * Detaches the partition concurrently (SHARE UPDATE EXCLUSIVE on the parent: ingestion and reads
   * go on; it waits for the transactions that still see the partition), then drops the table,
   * which nothing reaches any more. An interrupted detach is finished with FINALIZE.
   */
  private async dropPartition(runner: QueryRunner, parent: string, table: { name: string; attached: boolean; pending: boolean }): Promise<void> {
    if (table.attached) await runner.query(`ALTER TABLE "${parent}" DETACH PARTITION "${table.name}" ${table.pending ? 'FINALIZE' : 'CONCURRENTLY'}`);
    await runner.query(`DROP TABLE IF EXISTS "${table.name}"`);
  }

  /**
   * The read model's own retention, one workspace and at most RETENTION_BATCH rows per
   * transaction, so an ingestion batch never waits on it for longer than one such transaction.
   */
  private async retain(runner: QueryRunner, projector: StreamProjector<unknown>, cutoff: Date): Promise<void> {
    let after = '';
    for (;;) {
      const page = await this.workspaces.idsAfter(after, RETENTION_PAGE, runner.manager);
      for (const workspaceId of page) {
        let deleted: number;
        do {
          deleted = await runner.manager.transaction(async (manager) => {
            // Not waiting for the WAL flush: a deletion lost in a crash is done again by the next
            // run, and the commit spares ingestion's commits one flush per workspace.
            await manager.query(`SET LOCAL synchronous_commit = off`);
            return projector.retain(manager, workspaceId, cutoff, RETENTION_BATCH);
          });
        }
        while (deleted === RETENTION_BATCH);
      }
      if (page.length < RETENTION_PAGE) return;
      after = page[page.length - 1];
    }
  }

  @Interval(MAINTENANCE_INTERVAL_MS)
  async maintenanceTick(): Promise<void> {
    try {
      await this.maintain();
    } catch (error) {
      this.logger.warn({ msg: 'read model maintenance failed', ...errorFields(error) });
    }
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopping = true;
    await this.running;
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

  private async ensurePartition(table: string, at: Date): Promise<void> {
    if (!this.partitions.has(`${table}:${monthKey(at)}`)) await this.createPartition(table, at);
  }

  /**
   * Creates the month's partition unless it exists, in a statement of its own (its own
   * transaction, on `db`: never inside another transaction); the cache lists it only once that
   * has committed.
   */
  private async createPartition(table: string, at: Date, db: DataSource | QueryRunner = this.dataSource): Promise<void> {
    await db.query(`SELECT read_model_ensure_partition($1, $2::date)`, [table, monthStart(at).toISOString().slice(0, 10)]);
    this.partitions.add(`${table}:${monthKey(at)}`);
  }

  /** Parses a batch; parks (and acknowledges) the malformed entries and those of unknown workspaces. */
  private async parse(projector: StreamProjector<unknown>, redis: Redis, key: string, raw: RawEntry[]): Promise<{ valid: ParsedEntry<unknown>[]; parked: number }> {
    const parsed: ParsedEntry<unknown>[] = [];
    const parked: (ParkedEntry & { data: string | null })[] = [];
    const oldest = monthStart(new Date(), -this.config.readModelRetentionMonths).getTime();
    for (const [id, fields] of raw) {
      const index = fields ? fields.findIndex((f, i) => i % 2 === 0 && f === 'data') : -1;
      const data = index >= 0 ? fields![index + 1] : null;
      let reader: EntryReader | null = null;
      try {
        reader = EntryReader.parse(data);
        const entry = projector.parse(reader);
        const at = entry.partitionTime?.getTime();
        if (at !== undefined && at > Date.now() + FUTURE_SKEW_MS) throw new MalformedEntry('occurred_at is in the future');
        if (at !== undefined && at < oldest) throw new MalformedEntry('occurred_at is older than the retention period');
        parsed.push({ id, ...entry });
      } catch (error) {
        if (!(error instanceof MalformedEntry)) throw error;
        parked.push({ id, workspaceId: reader?.workspaceHint() ?? null, reason: error.message, data });
      }
    }

    const workspaceIds = [...new Set(parsed.map((e) => e.workspaceId))];
    const known = new Set<string>(
      workspaceIds.length === 0 ? [] : (await this.dataSource.query(`SELECT id FROM workspaces WHERE id = ANY($1)`, [workspaceIds])).map((r: { id: string }) => r.id),
    );
    const valid = parsed.filter((e) => known.has(e.workspaceId));
    for (const e of parsed) if (!known.has(e.workspaceId)) parked.push({ id: e.id, workspaceId: e.workspaceId, reason: 'unknown workspace', data: null });

    if (parked.length > 0) {
      await this.dataSource.transaction(async (manager) => {
        await manager.query(
          `INSERT INTO stream_parked (stream, entry_id, workspace_id, reason, data)
           SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[]) ON CONFLICT DO NOTHING`,
          [projector.stream, parked.map((p) => p.id), parked.map((p) => p.workspaceId), parked.map((p) => p.reason), parked.map((p) => p.data?.slice(0, PARKED_DATA_MAX) ?? null)],
        );
        await projector.parked?.(manager, parked);
      });
      await redis.xAck(key, GROUP, parked.map((p) => p.id));
      for (const p of parked) this.logger.warn({ msg: 'stream entry parked', stream: projector.stream, entry_id: p.id, reason: p.reason });
      this.metrics.streamParked.inc({ stream: projector.stream }, parked.length);
    }

    return { valid, parked: parked.length };
  }

  /** Projects a parsed batch and acknowledges what was committed. */
  private async commit(batch: AdmittedBatch, options: PassOptions): Promise<PassResult> {
    const { projector, redis, key, valid } = batch;
    for (const at of monthsOf(valid)) await this.ensurePartition(projector.partitioned, at);
    const groups = new Map<string, ParsedEntry<unknown>[]>();
    for (const e of valid) {
      const list = groups.get(e.workspaceId);
      if (list) list.push(e);
      else groups.set(e.workspaceId, [e]);
    }
    // Workspaces are dealt to shards projected concurrently, each in its own transaction: shards
    // share no row of any read model table (every key starts with the workspace), so they never
    // wait on each other. A shard that fails falls back to one transaction per workspace, so one
    // failing workspace neither blocks the others nor loses its entries (they stay pending).
    const outcomes = await Promise.all(shardWorkspaces(groups, options.shards ?? PROJECT_SHARDS).map((shard) => this.projectShard(projector, shard)));
    const committed = outcomes.flatMap((o) => o.committed);
    const failed = outcomes.reduce((n, o) => n + o.failed, 0);
    if (committed.length > 0) await redis.xAck(key, GROUP, committed);
    return { reclaimed: batch.reclaimed, fresh: batch.fresh, projected: committed.length, parked: batch.parked, failed, bytes: batch.bytes };
  }

  /** One shard in one transaction; if that fails (and it holds several workspaces), each workspace alone. */
  private async projectShard(projector: StreamProjector<unknown>, shard: [string, ParsedEntry<unknown>[]][]): Promise<{ committed: string[]; failed: number }> {
    const committed: string[] = [];
    let failed = 0;
    if (shard.length > 1 && (await this.project(projector, shard.flatMap(([, entries]) => entries), null))) {
      for (const [, entries] of shard) for (const e of entries) committed.push(e.id);
      return { committed, failed };
    }
    for (const [workspaceId, entries] of shard) {
      if (await this.project(projector, entries, workspaceId)) for (const e of entries) committed.push(e.id);
      else failed += entries.length;
    }
    return { committed, failed };
  }

  /**
   * Projects `entries` in one transaction. A partition the cache listed but that is gone (dropped
   * under this process, e.g. by another replica's retention) fails the transaction with a routing
   * error: the months of the entries are created again and the transaction retried once.
   */
  private async project(projector: StreamProjector<unknown>, entries: ParsedEntry<unknown>[], workspaceId: string | null): Promise<boolean> {
    const attempt = () => inTransaction(this.dataSource, (tx) => projector.project(tx.manager, entries, tx));
    try {
      await attempt().catch(async (error: unknown) => {
        if (!isMissingPartition(error)) throw error;
        for (const at of monthsOf(entries)) await this.createPartition(projector.partitioned, at);
        await attempt();
      });
      return true;
    } catch (error) {
      if (workspaceId !== null) {
        this.logger.warn({
          msg: 'workspace batch rolled back; its entries stay pending',
          stream: projector.stream,
          workspace_id: workspaceId,
          entries: entries.length,
          ...errorFields(error),
        });
      }
      return false;
    }
  }
}
