/**
 * Read-model benchmark (issue 6), each figure beside a baseline measured in the same run:
 * - seeds BENCH_ROWS (default 10,000,000) usage events and as many receipt revisions across 1,000
 *   workspaces (one busy workspace holds 10%), with their rollups, heads and counters;
 * - a 30-day usage summary of the busy workspace (UsageService, rollups) vs the same aggregate as a
 *   raw GROUP BY over usage_events;
 * - the busy hour (issue 23): 3,600,000 more events of the busy workspace inside the hour of `now`
 *   (evenly up to `now`), then summaries of windows ending now (last 1 h, 24 h, 30 days minus 17
 *   minutes), ending at the last millisecond of the minute before now's (the most raw events at
 *   the edge) and hour-aligned windows of the same lengths, each beside the raw GROUP BY of the
 *   same window;
 * - the receipts list filtered by state or decision vs the unfiltered first page, with and without
 *   the filter indexes;
 * - the receipts list first page and a deep keyset page (ReceiptsService) vs the deep page read
 *   with OFFSET;
 * - ingestion end to end (XADD to committed and queryable through StreamsService.drain, the
 *   consumer job's loop, while the producer process of bench/stream-producer.ts is still adding) of BENCH_INGEST
 *   receipt revisions (default 100,000) and twice as many usage events vs a bare batched INSERT
 *   of the same rows;
 * - ingestion of as many fresh receipt revisions while a maintenance run with a one-month
 *   retention drops the oldest months, vs the receipts ingestion without it, and how long
 *   ingestion statements waited on a lock meanwhile.
 * - with BENCH_BEFORE_PROJECTOR (a copy of the usage projector of the code before, e.g. `git show
 *   main:src/modules/usage/usage.projector.ts > /tmp/before/usage.projector.ts`), ingestion runs in
 *   alternating rounds before/after: before = that projector and no receipt filter indexes.
 * Run: `NODE_PATH=. node -r ts-node/register/transpile-only bench/read-models.ts` with the PostgreSQL and Redis
 * of `npm test` (DATABASE_URL, REDIS_URL). A fresh database is created and dropped (a copy of the
 * kept BENCH_SEEDED database when that is set).
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fork } from 'node:child_process';
import { join } from 'node:path';
import { Client } from 'pg';
import { createClient, RedisClientType } from 'redis';
import { DataSource } from 'typeorm';
import { loadConfig } from 'src/config/config';
import { databaseBounds, dataSourceOptions } from 'src/database/data-source';
import { runMigrations } from 'src/database/migrate';
import { useCursorKeys } from 'src/common/pagination/cursor';
import { encodeReceiptCursor } from 'src/modules/receipts/receipt-cursor';
import { ReceiptsService } from 'src/modules/receipts/receipts.service';
import { ReceiptsProjector } from 'src/modules/receipts/receipts.projector';
import { ReceiptsRepository } from 'src/modules/receipts/receipts.repository';
import { BATCH_LIMIT, monthStart, PROJECT_SHARDS, StreamProjector, StreamsService } from 'src/modules/streams/streams.service';
import { EntryParking } from 'src/modules/streams/entry-parking';
import { ParkedStreamEntriesRepository } from 'src/modules/streams/parked-stream-entries.repository';
import { ReadModelMaintenance } from 'src/modules/streams/read-model-maintenance';
import { ReadModelPartitions } from 'src/modules/streams/read-model-partitions';
import { ReadModelPartitionsRepository } from 'src/modules/streams/read-model-partitions.repository';
import { ShardedProjection } from 'src/modules/streams/sharded-projection';
import { StreamReader } from 'src/modules/streams/stream-reader';
import { DIMENSIONS, EVENT_TOTALS, TOTALS_FIELDS, UsageProjector } from 'src/modules/usage/usage.projector';
import { UsageEventsRepository } from 'src/modules/usage/usage-events.repository';
import { UsageRollupsRepository } from 'src/modules/usage/usage-rollups.repository';
import { KeysService } from 'src/modules/keys/keys.service';
import { VirtualKeysRepository } from 'src/modules/keys/virtual-keys.repository';
import { UsageService } from 'src/modules/usage/usage.service';
import { Transactions } from 'src/database/transactions';
import { WorkspacesService } from 'src/modules/workspaces/workspaces.service';
import { WorkspacesRepository } from 'src/platform/tenancy/workspaces.repository';
import { ReceiptsQueryDto } from 'src/modules/receipts/dto/receipts-query.dto';
import { MetricsService } from 'src/platform/metrics/metrics.service';
import { createSuiteDatabase, databaseExists, REDIS_URL } from 'test/support/database';
import { ENTITIES } from 'src/entities';

const usageProjector = new UsageProjector(new UsageEventsRepository());

/** The stream consumer as the application composes it (StreamsModule), on `ds`. */
function streamsOn(ds: DataSource, redis: RedisClientType | null, config: ReturnType<typeof loadConfig>, workspaces: WorkspacesService): StreamsService {
  const metrics = new MetricsService(config);
  const transactions = new Transactions(ds);
  const reader = new StreamReader(redis, config);
  const partitionsRepository = new ReadModelPartitionsRepository(ds);
  const partitions = new ReadModelPartitions(partitionsRepository);
  const parked = new ParkedStreamEntriesRepository();
  return new StreamsService(
    reader,
    new EntryParking(config, transactions, parked, reader, workspaces, metrics),
    new ShardedProjection(transactions, partitions, reader),
    new ReadModelMaintenance(config, partitionsRepository, partitions, parked, workspaces),
    metrics,
  );
}

const ROWS = Number(process.env.BENCH_ROWS ?? 10_000_000);
const INGEST = Number(process.env.BENCH_INGEST ?? 100_000);
const WORKSPACES = 1000;
const BUSY = 'ws_bench_0000';
const DAY = 86_400_000;
const HOUR = 3_600_000;
const MINUTE = 60_000;
const BUSY_HOUR_EVENTS = Number(process.env.BENCH_BUSY_EVENTS ?? 3_600_000);
const BEFORE_PROJECTOR = process.env.BENCH_BEFORE_PROJECTOR;
const PRODUCER = join(__dirname, 'stream-producer.ts');

async function p95(iterations: number, work: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < Math.min(5, iterations); i++) await work();
  const times: number[] = [];
  for (let i = 0; i < iterations; i++) {
    const start = process.hrtime.bigint();
    await work();
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length * 0.95)];
}

const report = (name: string, value: number, unit: string, baseline: number, note: string) =>
  console.log(`${name.padEnd(34)} ${value.toFixed(1).padStart(10)} ${unit.padEnd(7)} baseline ${baseline.toFixed(1).padStart(10)} ${unit.padEnd(7)} ratio ${(value / baseline).toFixed(2)}  (${note})`);

/** Milliseconds of CPU the Redis server has used so far (INFO cpu). */
async function redisCpu(redis: RedisClientType): Promise<number> {
  const info = await redis.info('cpu');
  const seconds = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
  return (seconds('used_cpu_user') + seconds('used_cpu_sys')) * 1000;
}

/**
 * CPU milliseconds used so far by each PostgreSQL backend of this database (Linux /proc, 100 ticks
 * a second): unlike a rate, unaffected by other work on the machine.
 */
async function backendCpu(ds: DataSource): Promise<Map<number, number>> {
  const rows: { pid: number }[] = await ds.query(`SELECT pid FROM pg_stat_activity WHERE datname = current_database()`);
  const out = new Map<number, number>();
  for (const { pid } of rows) {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
      out.set(pid, (Number(fields[11]) + Number(fields[12])) * 10);
    } catch {
      // The backend exited meanwhile.
    }
  }
  return out;
}

/** The rollup rows of every event of `source` at both levels (hourly per dimension, per minute per combination), added to those already there. */
const rollupsOf = (source: string) => {
  const totals = `${TOTALS_FIELDS.map((f) => EVENT_TOTALS[f]).join(', ')}, max(ingested_at)`;
  const add = `${TOTALS_FIELDS.map((f) => `${f} = r.${f} + EXCLUDED.${f}`).join(', ')}`;
  const columns = Object.values(DIMENSIONS).join(', ');
  return [
    `INSERT INTO usage_rollups AS r (workspace_id, dim, bucket, value, ${TOTALS_FIELDS.join(', ')}, last_ingested_at)
     SELECT workspace_id, d.dim, date_trunc('hour', occurred_at, 'UTC'), d.value, ${totals}
     FROM ${source} CROSS JOIN LATERAL (VALUES ${Object.entries(DIMENSIONS).map(([dim, column]) => `('${dim}', ${column})`).join(', ')}) AS d(dim, value)
     GROUP BY 1, 2, 3, 4
     ON CONFLICT (workspace_id, dim, bucket, value) DO UPDATE SET ${add}`,
    `INSERT INTO usage_minute_rollups AS r (workspace_id, bucket, ${columns}, ${TOTALS_FIELDS.join(', ')}, last_ingested_at)
     SELECT workspace_id, date_trunc('minute', occurred_at, 'UTC'), ${columns}, ${totals}
     FROM ${source} GROUP BY 1, 2, ${columns}
     ON CONFLICT (workspace_id, bucket, ${columns}) DO UPDATE SET ${add}`,
  ];
};

/**
 * State and decision of a receipt revision (the head is the odd i): in every workspace 1 invocation
 * in 100 denied, 1 in 50 awaiting approval, the others completed (in flight at revision 1).
 */
const HEAD_STATE = `CASE WHEN i % 2 = 0 THEN 'in_flight' WHEN (i / 2) % 1000 = 70 THEN 'denied' WHEN (i / 2) % 500 = 30 THEN 'awaiting_approval' ELSE 'completed' END,
              CASE WHEN (i / 2) % 1000 = 70 THEN 'deny' WHEN (i / 2) % 500 = 30 THEN 'approval_required' ELSE 'allow' END`;

/** Seeds raw rows in PostgreSQL with generate_series, then derives rollups, heads and counters as ingestion would. */
async function seed(ds: DataSource, now: Date): Promise<void> {
  console.log(`seeding ${ROWS} usage events and ${ROWS} receipt revisions across ${WORKSPACES} workspaces`);
  const from = new Date(now.getTime() - 60 * DAY);
  for (let m = -3; m <= 1; m++) {
    for (const table of ['usage_events', 'receipt_revisions']) await ds.query(`SELECT read_model_ensure_partition($1, $2::date)`, [table, monthStart(now, m).toISOString().slice(0, 10)]);
  }
  await ds.query(`INSERT INTO organizations (id) VALUES ('org_bench')`);
  await ds.query(
    `INSERT INTO workspaces (id, org_id, slug, env) SELECT 'ws_bench_' || lpad(i::text, 4, '0'), 'org_bench', 's' || i, 'dev' FROM generate_series(0, $1 - 1) i`,
    [WORKSPACES],
  );
  // Workspace of row i: the busy one for every tenth row, else spread over the others.
  const ws = `CASE WHEN i % 10 = 0 THEN '${BUSY}' ELSE 'ws_bench_' || lpad((1 + i % ${WORKSPACES - 1})::text, 4, '0') END`;
  const at = `$1::timestamptz + ((i::bigint * 5184000000 / $2) || ' milliseconds')::interval`;
  const chunk = 1_000_000;
  for (let start = 0; start < ROWS; start += chunk) {
    const end = Math.min(ROWS, start + chunk) - 1;
    await ds.query(
      `INSERT INTO usage_events (workspace_id, occurred_at, event_id, ingested_at, kind, key_id, model, provider, tool, pricing_known, outcome, usd_micros, tokens_in, tokens_out, tokens_cached, tokens_reasoning)
       SELECT ${ws}, ${at}, 'evt_' || i, now(), CASE WHEN i % 3 = 0 THEN 'tool' ELSE 'llm' END, 'key_' || (i % 20),
              CASE WHEN i % 3 = 0 THEN NULL ELSE 'model_' || (i % 6) END, CASE WHEN i % 3 = 0 THEN NULL ELSE 'provider_' || (i % 3) END,
              CASE WHEN i % 3 = 0 THEN 'tool_' || (i % 30) END, i % 17 <> 0, CASE WHEN i % 41 = 0 THEN 'failure' WHEN i % 37 = 0 THEN 'partial' ELSE 'ok' END,
              i % 5000, i % 900, i % 700, i % 50, i % 30
       FROM generate_series($3::bigint, $4::bigint) i`,
      [from, ROWS, start, end],
    );
    await ds.query(
      `INSERT INTO receipt_revisions (workspace_id, invocation_id, receipt_revision, receipt_id, tool, key_id, connection_id, state, decision, dispatch_state,
              evidence_trust, verification_state, verification_method, usd_micros, attempt_count, latency_ms, occurred_at, updated_at, envelope)
       SELECT ${ws.replaceAll('i %', '(i / 2) %')}, 'inv_' || (i / 2), 1 + i % 2, 'rcp_' || i, 'tool_' || (i % 30), 'key_' || (i % 20), 'conn_' || (i % 5),
              ${HEAD_STATE}, 'accepted', 'gateway_observed', 'not_required', 'none', i % 5000, 1, i % 900,
              ${at.replace('i::bigint', '(i / 2 * 2)::bigint')}, ${at}, '{"routing":{"candidates":[]}}'
       FROM generate_series($3::bigint, $4::bigint) i`,
      [from, ROWS, start, end],
    );
    console.log(`seeded ${end + 1} usage events and receipt revisions`);
  }
  // The two big aggregations sort or hash tens of millions of rows: give them memory.
  await ds.transaction(async (m) => {
    await m.query(`SET LOCAL work_mem = '1GB'`);
    for (const statement of rollupsOf('usage_events')) await m.query(statement);
    await m.query(
      `INSERT INTO receipt_heads (workspace_id, invocation_id, receipt_revision, receipt_id, tool, key_id, connection_id, state, decision, dispatch_state,
              evidence_trust, verification_state, verification_method, usd_micros, attempt_count, latency_ms, occurred_at, updated_at)
       SELECT DISTINCT ON (invocation_id) workspace_id, invocation_id, receipt_revision, receipt_id, tool, key_id, connection_id, state, decision, dispatch_state,
              evidence_trust, verification_state, verification_method, usd_micros, attempt_count, latency_ms, occurred_at, updated_at
       FROM receipt_revisions ORDER BY invocation_id, receipt_revision DESC`,
    );
  });
  await ds.query(`INSERT INTO receipt_counters SELECT workspace_id, count(*), max(occurred_at) FROM receipt_heads GROUP BY workspace_id`);
  await ds.query(`VACUUM ANALYZE`);
}

/**
 * The busy hour: BUSY_HOUR_EVENTS more events of the busy workspace spread evenly over now's hour
 * up to now (none in the future, as in production), added to both rollup levels as the projection
 * adds them. Answers the events' spacing in milliseconds.
 */
async function busyHour(ds: DataSource, now: Date): Promise<number> {
  const start = new Date(Math.floor(now.getTime() / HOUR) * HOUR);
  const spacing = (now.getTime() - start.getTime()) / BUSY_HOUR_EVENTS;
  const began = process.hrtime.bigint();
  await ds.transaction(async (m) => {
    await m.query(`SET LOCAL work_mem = '512MB'`);
    await m.query(
      `CREATE TEMP TABLE busy_hour ON COMMIT DROP AS
       SELECT '${BUSY}'::text AS workspace_id, $1::timestamptz + (floor(i * $3::float8) || ' milliseconds')::interval AS occurred_at, 'evt_busy_' || i AS event_id, now() AS ingested_at,
              CASE WHEN i % 3 = 0 THEN 'tool' ELSE 'llm' END AS kind, 'key_' || (i % 20) AS key_id,
              CASE WHEN i % 3 = 0 THEN NULL ELSE 'model_' || (i % 6) END AS model, CASE WHEN i % 3 = 0 THEN NULL ELSE 'provider_' || (i % 3) END AS provider,
              CASE WHEN i % 3 = 0 THEN 'tool_' || (i % 30) END AS tool, i % 17 <> 0 AS pricing_known,
              CASE WHEN i % 41 = 0 THEN 'failure' WHEN i % 37 = 0 THEN 'partial' ELSE 'ok' END AS outcome,
              (i % 5000)::bigint AS usd_micros, (i % 900)::bigint AS tokens_in, (i % 700)::bigint AS tokens_out, (i % 50)::bigint AS tokens_cached, (i % 30)::bigint AS tokens_reasoning
       FROM generate_series(0, $2 - 1) i`,
      [start, BUSY_HOUR_EVENTS, spacing],
    );
    await m.query(
      `INSERT INTO usage_events (workspace_id, occurred_at, event_id, ingested_at, kind, key_id, model, provider, tool, pricing_known, outcome, usd_micros, tokens_in, tokens_out, tokens_cached, tokens_reasoning)
       SELECT * FROM busy_hour`,
    );
    for (const statement of rollupsOf('busy_hour')) await m.query(statement);
  });
  await ds.query(`VACUUM ANALYZE usage_events, usage_rollups, usage_minute_rollups`);
  console.log(
    `busy hour: ${BUSY_HOUR_EVENTS} events of ${BUSY} from ${start.toISOString()} to ${now.toISOString()} (${(1000 / spacing).toFixed(0)} a second) added in ${(Number(process.hrtime.bigint() - began) / 1e9).toFixed(0)} s`,
  );
  return spacing;
}

/**
 * Summaries of the busy workspace over windows ending now, ending at the last millisecond of the
 * minute before now's (nearly a whole minute of raw events at the edge: the worst case) and
 * hour-aligned (ending at the end of the busy hour), each beside the raw GROUP BY of the same window.
 */
async function busyHourSummaries(ds: DataSource, usage: UsageService, now: Date, spacing: number): Promise<void> {
  const rawSummary = (from: Date, to: Date) =>
    ds.query(
      `SELECT model, ${TOTALS_FIELDS.map((f) => `${EVENT_TOTALS[f]}::text`).join(', ')} FROM usage_events WHERE workspace_id = $1 AND occurred_at >= $2 AND occurred_at < $3 GROUP BY model`,
      [BUSY, from, to],
    );
  const lastOfMinute = new Date(Math.floor(now.getTime() / MINUTE) * MINUTE - 1);
  const hourEnd = new Date(Math.floor(now.getTime() / HOUR) * HOUR + HOUR);
  const lengths = [['1 h', HOUR], ['24 h', DAY], ['30 d - 17 min', 30 * DAY - 17 * MINUTE]] as const;
  const aligned = new Map<string, number>();
  for (const [name, length] of lengths) {
    const hours = Math.max(1, Math.floor(length / HOUR));
    const window = { from: new Date(hourEnd.getTime() - hours * HOUR), to: hourEnd };
    aligned.set(name, await p95(100, () => usage.summary(BUSY, { window, groupBy: 'model', limit: 50 })));
    const raw = await p95(length > DAY ? 3 : 10, () => rawSummary(window.from, window.to));
    report(`busy: ${hours} h hour-aligned p95`, aligned.get(name)!, 'ms', raw, 'baseline: raw GROUP BY of the same window');
  }
  for (const [end, label] of [[now, 'ending now'], [lastOfMinute, 'ending at a past :59.999']] as const) {
    for (const [name, length] of lengths) {
      const window = { from: new Date(end.getTime() - length), to: end };
      const summary = await p95(100, () => usage.summary(BUSY, { window, groupBy: 'model', limit: 50 }));
      const raw = await p95(length > DAY ? 3 : 10, () => rawSummary(window.from, window.to));
      report(`busy: ${name} ${label} p95`, summary, 'ms', raw, `baseline: raw GROUP BY; ${(summary / aligned.get(name)!).toFixed(2)}x hour-aligned; target < 50 ms, <= 2x`);
    }
  }
  const edge = (end: Date) => Math.round((end.getTime() - Math.floor(end.getTime() / MINUTE) * MINUTE) / spacing);
  console.log(
    `busy: events in the newest edge's sub-minute remainder: ${edge(now)} ending now (read from the minute rollup: none lies after now), ~${edge(lastOfMinute)} ending at a past :59.999 (read raw)`,
  );
}

/** Receipts list first pages filtered by state or decision of the busy workspace vs the unfiltered one. */
async function filteredReceipts(receipts: ReceiptsService, label: string): Promise<void> {
  const query = (extra: Partial<ReceiptsQueryDto>) => Object.assign(new ReceiptsQueryDto(), { limit: 50 }, extra);
  const unfiltered = await p95(200, () => receipts.list(BUSY, query({})));
  for (const filter of [{ state: 'completed' }, { state: 'denied' }, { state: 'awaiting_approval' }, { state: 'rate_limited' }, { decision: 'allow' }, { decision: 'deny' }, { decision: 'approval_required' }] as Partial<ReceiptsQueryDto>[]) {
    const filtered = await p95(200, () => receipts.list(BUSY, query(filter)));
    report(`receipts ${Object.entries(filter)[0].join('=')} ${label} p95`, filtered, 'ms', unfiltered, 'baseline: unfiltered first page; target <= 2x');
  }
}

/** Receipt revision entries as the gateway writes them, `tag` keeping their ids apart from other phases'. */
function receiptEntries(now: Date, tag: string): string[] {
  const at = (i: number) => new Date(now.getTime() - (i % 1000) * 1000).toISOString();
  return Array.from({ length: INGEST }, (_, i) =>
    JSON.stringify({
      workspace_id: `ws_bench_${String(i % WORKSPACES).padStart(4, '0')}`, invocation_id: `inv_${tag}_${i}`, receipt_revision: 1, receipt_id: `rcp_${tag}_${i}`,
      tool: 'tool_1', key_id: 'key_1', connection_id: 'conn_1', state: 'completed', decision: 'allow', dispatch_state: 'accepted',
      evidence_trust: 'gateway_observed', verification_state: 'not_required', verification_method: 'none', usd_micros: 12, attempt_count: 1,
      latency_ms: 40, occurred_at: at(i), updated_at: at(i), envelope: { routing: { candidates: [] } },
    }),
  );
}

interface Ingested {
  rate: number;
  postgresCpu: number;
  nodeCpu: number;
  redisCpu: number;
  producerCpu: number;
}

/**
 * The producer (bench/stream-producer.ts, a process of its own) XADDs `entries` while the consumer
 * drains as its job does; the rate runs from the first XADD to the commit (and XACK) of the last
 * entry. CPU figures are per 1,000 entries.
 */
async function timedIngestion(ds: DataSource, redis: RedisClientType, streams: StreamsService, key: string, entries: string[]): Promise<Ingested> {
  const producer = fork(PRODUCER, { execArgv: ['-r', 'ts-node/register/transpile-only'] });
  // A producer that dies (Redis refused a command) would leave the drain loop waiting forever.
  let producerFailed = false;
  producer.once('exit', (code) => (producerFailed = code !== 0));
  const message = () => new Promise<unknown>((resolve, reject) => producer.once('message', resolve).once('error', reject));
  const ready = message();
  producer.send({ url: REDIS_URL, key, entries });
  await ready;
  // Every ingestion starts from a checkpoint, so one the previous phase triggered never lands
  // in the middle of it (the first write to each page after a checkpoint logs the whole page).
  await ds.query('CHECKPOINT');
  const produced = message() as Promise<{ cpuMs: number }>;
  const cpuBefore = { postgres: await backendCpu(ds), node: process.cpuUsage(), redis: await redisCpu(redis) };
  const start = process.hrtime.bigint();
  producer.send('start');
  let done = 0;
  while (done < entries.length) {
    if (producerFailed) throw new Error(`the producer of ${key} failed`);
    const projected = await streams.drain();
    done += projected;
    if (projected === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  }
  const rate = entries.length / (Number(process.hrtime.bigint() - start) / 1e9);
  const node = process.cpuUsage(cpuBefore.node);
  const redisUsed = (await redisCpu(redis)) - cpuBefore.redis;
  const { cpuMs: producerCpu } = await produced;
  let postgresCpu = 0;
  for (const [pid, ms] of await backendCpu(ds)) postgresCpu += ms - (cpuBefore.postgres.get(pid) ?? 0);
  const perThousand = (ms: number) => (ms * 1000) / entries.length;
  return { rate, postgresCpu: perThousand(postgresCpu), nodeCpu: perThousand((node.user + node.system) / 1000), redisCpu: perThousand(redisUsed), producerCpu: perThousand(producerCpu) };
}

async function ingest(ds: DataSource, redis: RedisClientType, streams: StreamsService, prefix: string, now: Date, tag = 'ingest') {
  const at = (i: number) => new Date(now.getTime() - (i % 1000) * 1000).toISOString();
  const receipts = receiptEntries(now, tag);
  const usage = Array.from({ length: INGEST * 2 }, (_, i) =>
    JSON.stringify({
      event_id: `evt_${tag}_${i}`, workspace_id: `ws_bench_${String(i % WORKSPACES).padStart(4, '0')}`, kind: 'llm', key_id: `key_${i % 20}`,
      model: `model_${i % 6}`, provider: 'provider_1', tool: null, pricing_status: 'known', usd_micros: 3, tokens_in: 10, tokens_out: 5,
      tokens_cached: 0, tokens_reasoning: 0, outcome: 'ok', occurred_at: at(i),
    }),
  );
  const results: Record<string, Ingested & { baseline: number }> = {};
  for (const [stream, entries] of [['receipts', receipts], ['usage', usage]] as const) {
    const ingested = await timedIngestion(ds, redis, streams, `${prefix}:${stream}`, entries);
    // Baseline: the same rows, batched INSERT (batches of BATCH_LIMIT, one connection) into a bare
    // copy of the table (no stream, no parsing, no indexes, no projection).
    const table = stream === 'receipts' ? 'receipt_revisions' : 'usage_events';
    await ds.query(`DROP TABLE IF EXISTS bare_${table}; CREATE TABLE bare_${table} (LIKE ${table})`);
    const parsed = entries.map((e) => JSON.parse(e));
    const bareStart = process.hrtime.bigint();
    for (let i = 0; i < parsed.length; i += BATCH_LIMIT) {
      const rows = parsed.slice(i, i + BATCH_LIMIT);
      if (stream === 'receipts') {
        await ds.query(
          `INSERT INTO bare_receipt_revisions (workspace_id, invocation_id, receipt_revision, receipt_id, state, decision, dispatch_state, evidence_trust, verification_state, verification_method, attempt_count, occurred_at, updated_at, envelope)
           SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::int[], $12::timestamptz[], $13::timestamptz[], $14::jsonb[])`,
          ['workspace_id', 'invocation_id', 'receipt_revision', 'receipt_id', 'state', 'decision', 'dispatch_state', 'evidence_trust', 'verification_state', 'verification_method', 'attempt_count', 'occurred_at', 'updated_at', 'envelope'].map(
            (c) => rows.map((r) => (c === 'envelope' ? JSON.stringify(r[c]) : r[c])),
          ),
        );
      } else {
        await ds.query(
          `INSERT INTO bare_usage_events (workspace_id, occurred_at, event_id, ingested_at, kind, key_id, model, provider, tool, pricing_known, outcome, usd_micros, tokens_in, tokens_out, tokens_cached, tokens_reasoning)
           SELECT a, b, c, now(), d, e, f, g, h, true, i, j, k, l, m, n FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::bigint[], $11::bigint[], $12::bigint[], $13::bigint[], $14::bigint[]) AS t(a, b, c, d, e, f, g, h, i, j, k, l, m, n)`,
          ['workspace_id', 'occurred_at', 'event_id', 'kind', 'key_id', 'model', 'provider', 'tool', 'outcome', 'usd_micros', 'tokens_in', 'tokens_out', 'tokens_cached', 'tokens_reasoning'].map((c) => rows.map((r) => r[c])),
        );
      }
    }
    results[stream] = { ...ingested, baseline: parsed.length / (Number(process.hrtime.bigint() - bareStart) / 1e9) };
  }
  return results;
}

/** The receipt filter indexes (migration 1763769681000), dropped for the before side. */
const FILTER_INDEXES = {
  drop: `DROP INDEX receipt_heads_state_idx, receipt_heads_decision_idx`,
  create: `CREATE INDEX receipt_heads_state_idx ON receipt_heads (workspace_id, state, occurred_at, receipt_id) WHERE state <> 'completed';
           CREATE INDEX receipt_heads_decision_idx ON receipt_heads (workspace_id, decision, occurred_at, receipt_id) WHERE decision <> 'allow'`,
};

/**
 * Ingestion before and after in one run, alternating four rounds: before = the usage projector of
 * BENCH_BEFORE_PROJECTOR (hourly rollups only) and receipt heads without the filter indexes, after
 * = this code. Each round ingests fresh ids.
 */
async function ingestRounds(ds: DataSource, redis: RedisClientType, config: ReturnType<typeof loadConfig>, workspaces: WorkspacesService, after: StreamsService, prefix: string, now: Date) {
  const { usageProjector: beforeUsage } = require(BEFORE_PROJECTOR!) as { usageProjector: StreamProjector<unknown> };
  const before = streamsOn(ds, redis, config, workspaces);
  before.register(new ReceiptsProjector(new ReceiptsRepository(ds)));
  before.register(beforeUsage);
  const rows: string[] = [];
  for (const round of ['before1', 'after1', 'before2', 'after2', 'before3', 'after3']) {
    const isBefore = round.startsWith('before');
    if (isBefore) await ds.query(FILTER_INDEXES.drop);
    const r = await ingest(ds, redis, isBefore ? before : after, prefix, now, round);
    if (isBefore) await ds.query(FILTER_INDEXES.create);
    const load = readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
    rows.push(
      `| ${round} | ${r.receipts.rate.toFixed(0)} | ${r.receipts.baseline.toFixed(0)} | ${(r.receipts.rate / r.receipts.baseline).toFixed(2)} | ` +
        `${r.usage.rate.toFixed(0)} | ${r.usage.baseline.toFixed(0)} | ${(r.usage.rate / r.usage.baseline).toFixed(2)} | ` +
        `${r.receipts.postgresCpu.toFixed(0)} / ${r.usage.postgresCpu.toFixed(0)} | ${load} |`,
    );
    console.log(rows[rows.length - 1]);
  }
  await before.onApplicationShutdown();
  console.log(['| round | receipts/s | bare | ratio | usage/s | bare | ratio | PostgreSQL ms per 1,000 (receipts / usage) | load |', ...rows].join('\n'));
}

/**
 * Retention while ingestion runs: a maintenance run with a one-month retention (the oldest seeded
 * month and the one before it: partitions detached and dropped, heads, counters and rollups
 * deleted workspace by workspace) started with an ingestion of fresh receipt revisions, whose
 * every batch updates the counters retention updates too. Every 10 ms the ingestion statements
 * of this database waiting on a lock are sampled from pg_stat_activity.
 */
async function ingestDuringRetention(ds: DataSource, url: string, redis: RedisClientType, streams: StreamsService, keeper: StreamsService, prefix: string, now: Date) {
  const sampler = new Client({ connectionString: url });
  await sampler.connect();
  let sampling = true;
  const samples = { taken: 0, waiting: 0, longestMs: 0 };
  const waitingSince = new Map<number, number>();
  const sampled = (async () => {
    while (sampling) {
      const { rows } = await sampler.query(
        `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%unnest(%'`,
      );
      const at = Date.now();
      samples.taken += 1;
      samples.waiting += rows.length;
      const still = new Set(rows.map((r: { pid: number }) => r.pid));
      for (const pid of still) if (!waitingSince.has(pid)) waitingSince.set(pid, at);
      for (const [pid, since] of waitingSince) {
        samples.longestMs = Math.max(samples.longestMs, at - since);
        if (!still.has(pid)) waitingSince.delete(pid);
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  })();
  const started = process.hrtime.bigint();
  let retentionMs = 0;
  const retention = keeper.maintain(now).then((result) => {
    retentionMs = Number(process.hrtime.bigint() - started) / 1e6;
    return result;
  });
  const ingested = await timedIngestion(ds, redis, streams, `${prefix}:receipts`, receiptEntries(now, 'retention'));
  const result = await retention;
  sampling = false;
  await sampled;
  await sampler.end();
  return { ingested, retentionMs, result, samples };
}

/**
 * BENCH_SEEDED names a database kept between runs: seeded on the first run, then each run works
 * on a fresh copy of it (seeding 10M rows takes longer than everything else together).
 */
async function keepSeeded(name: string): Promise<void> {
  if (await databaseExists(name)) return;
  const kept = await createSuiteDatabase({ name });
  try {
    await runMigrations(kept.url);
    const ds = await new DataSource(dataSourceOptions(kept.url, 2, { entities: ENTITIES })).initialize();
    const now = new Date();
    await seed(ds, now);
    await ds.query(`CREATE TABLE bench_seeded AS SELECT $1::timestamptz AS seeded_at, $2::bigint AS seed_rows`, [now, ROWS]);
    await ds.destroy();
  } catch (error) {
    await kept.drop();
    throw error;
  }
}

async function main(): Promise<void> {
  const seeded = process.env.BENCH_SEEDED;
  if (seeded) await keepSeeded(seeded);
  const name = await createSuiteDatabase(seeded ? { template: seeded } : {});
  const url = name.url;
  const prefix = `bench${randomBytes(3).toString('hex')}`;
  const config = loadConfig({ DATABASE_URL: url, REDIS_URL, REDIS_PREFIX: prefix, LOG_LEVEL: 'error' });
  const redis: RedisClientType = createClient({ url: REDIS_URL });
  await redis.connect();
  let ds: DataSource | null = null;
  let consumerDs: DataSource | null = null;
  try {
    await runMigrations(url);
    ds = await new DataSource(dataSourceOptions(url, 10, { entities: ENTITIES })).initialize();
    let now = new Date();
    if (seeded) {
      const [meta] = await ds.query(`SELECT seeded_at, seed_rows::int AS rows FROM bench_seeded`);
      if (meta.rows !== ROWS) throw new Error(`${seeded} holds a seed of ${meta.rows} rows, not BENCH_ROWS=${ROWS}`);
      now = meta.seeded_at;
      console.log(`copied ${seeded}: ${ROWS} usage events and ${ROWS} receipt revisions across ${WORKSPACES} workspaces, seeded at ${now.toISOString()}`);
    } else {
      await seed(ds, now);
    }

    const usage = new UsageService(
      new UsageRollupsRepository(ds), usageProjector, null as never, null as never,
      new KeysService(new VirtualKeysRepository(ds), ...(Array(9).fill(null) as [never, never, never, never, never, never, never, never, never])),
      null as never,
      null as never,
    );
    const window = { from: new Date(now.getTime() - 30 * DAY), to: now };
    const summary = await p95(100, () => usage.summary(BUSY, { window, groupBy: 'model', limit: 50 }));
    const raw = await p95(10, () =>
      ds!.query(
        `SELECT model, ${TOTALS_FIELDS.map((f) => `${EVENT_TOTALS[f]}::text`).join(', ')} FROM usage_events WHERE workspace_id = $1 AND occurred_at >= $2 AND occurred_at < $3 GROUP BY model`,
        [BUSY, window.from, window.to],
      ),
    );
    report('usage summary 30 days, busy ws p95', summary, 'ms', raw, 'baseline: raw GROUP BY over usage_events; target < 50 ms');
    const spacing = await busyHour(ds, now);
    await busyHourSummaries(ds, usage, now, spacing);

    const receipts = new ReceiptsService(new ReceiptsRepository(ds), null as never, null as never, null as never);
    const query = (extra: Partial<ReceiptsQueryDto>) => Object.assign(new ReceiptsQueryDto(), { limit: 50 }, extra);
    const depth = Math.min(50_000, Math.floor(ROWS / 20) - 50);
    const [deep] = await ds.query(`SELECT occurred_at, receipt_id FROM receipt_heads WHERE workspace_id = $1 ORDER BY occurred_at DESC, receipt_id DESC OFFSET $2 LIMIT 1`, [BUSY, depth]);
    useCursorKeys([randomBytes(32)]);
    const cursor = encodeReceiptCursor(BUSY, deep.occurred_at, deep.receipt_id);
    const first = await p95(200, () => receipts.list(BUSY, query({})));
    const deepPage = await p95(200, () => receipts.list(BUSY, query({ cursor })));
    const offset = await p95(20, () => ds!.query(`SELECT * FROM receipt_heads WHERE workspace_id = $1 ORDER BY occurred_at DESC, receipt_id DESC OFFSET $2 LIMIT 50`, [BUSY, depth]));
    report('receipts first page p95', first, 'ms', offset, 'baseline: OFFSET page at the deep position; target < 20 ms');
    report(`receipts keyset page at ${depth} p95`, deepPage, 'ms', offset, 'baseline: the same page with OFFSET; target < 20 ms');
    const [{ heads: busyHeads }] = await ds.query(`SELECT count(*)::int AS heads FROM receipt_heads WHERE workspace_id = $1`, [BUSY]);
    console.log(`receipts filtered: ${busyHeads} receipts in ${BUSY}`);
    await filteredReceipts(receipts, 'indexed');
    await ds.query(FILTER_INDEXES.drop);
    await filteredReceipts(receipts, 'no index');
    await ds.query(FILTER_INDEXES.create);

    // The consumer on the application's bounded pool (DATABASE_STATEMENT_TIMEOUT_MS ...), as in
    // production; BENCH_DATABASE_BOUNDS=0 measures it without (issue 28's before and after).
    consumerDs = await new DataSource(dataSourceOptions(url, 10, { entities: ENTITIES, bounds: process.env.BENCH_DATABASE_BOUNDS === '0' ? undefined : databaseBounds(config) })).initialize();
    const workspaces = new WorkspacesService(null as never, new WorkspacesRepository(consumerDs), null as never, null as never, null as never, null as never, null as never, null as never, config);
    const streams = streamsOn(consumerDs, redis, config, workspaces);
    streams.register(new ReceiptsProjector(new ReceiptsRepository(consumerDs)));
    streams.register(usageProjector);
    if (BEFORE_PROJECTOR) await ingestRounds(ds, redis, config, workspaces, streams, prefix, now);
    const rates = await ingest(ds, redis, streams, prefix, now);
    report('ingest receipts, revisions/s', rates.receipts.rate, '/s', rates.receipts.baseline, 'XADD to queryable; baseline: bare batched INSERT; target >= 15000');
    report('ingest usage, events/s', rates.usage.rate, '/s', rates.usage.baseline, 'XADD to queryable; baseline: bare batched INSERT; target >= 30000');
    for (const [stream, r] of Object.entries(rates)) {
      console.log(
        `ingest ${stream}, CPU per 1,000 entries: PostgreSQL backends ${r.postgresCpu.toFixed(0)} ms, consumer (node) ${r.nodeCpu.toFixed(0)} ms, Redis ${r.redisCpu.toFixed(0)} ms, producer ${r.producerCpu.toFixed(0)} ms`,
      );
    }
    console.log(`ingest: batches of ${BATCH_LIMIT}, ${PROJECT_SHARDS} concurrent projection transactions per batch, both streams drained concurrently`);

    const keeper = streamsOn(ds, redis, { ...config, readModelRetentionMonths: 1 }, workspaces);
    keeper.register(new ReceiptsProjector(new ReceiptsRepository(ds)));
    keeper.register(usageProjector);
    const [heads] = await ds.query(`SELECT count(*)::int AS n FROM receipt_heads WHERE occurred_at < $1`, [monthStart(now, -1)]);
    const during = await ingestDuringRetention(ds, url, redis, streams, keeper, prefix, now);
    report('ingest receipts during retention', during.ingested.rate, '/s', rates.receipts.rate, 'baseline: the receipts ingestion above, without retention');
    console.log(
      `retention (1 month: ${heads.n} heads older than ${monthStart(now, -1).toISOString().slice(0, 10)}) took ${(during.retentionMs / 1000).toFixed(1)} s, ` +
        `${JSON.stringify(during.result)}; ingestion statements waiting on a lock: ${during.samples.waiting} in ${during.samples.taken} samples 10 ms apart, ` +
        `longest wait seen ${during.samples.longestMs} ms`,
    );
    await streams.onApplicationShutdown();
  } finally {
    await ds?.destroy();
    await consumerDs?.destroy();
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(keys);
    redis.destroy();
    await name.drop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
