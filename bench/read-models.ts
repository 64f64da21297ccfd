/**
 * Read-model benchmark (issue 6), each figure beside a baseline measured in the same run:
 * - seeds BENCH_ROWS (default 10,000,000) usage events and as many receipt revisions across 1,000
 *   workspaces (one busy workspace holds 10%), with their rollups, heads and counters;
 * - a 30-day usage summary of the busy workspace (UsageService, rollups) vs the same aggregate as a
 *   raw GROUP BY over usage_events;
 * - the receipts list first page and a deep keyset page (ReceiptsService) vs the deep page read
 *   with OFFSET;
 * - ingestion end to end (XADD to committed and queryable through StreamsService.drain, the
 *   consumer job's loop, while the producer process of bench/stream-producer.ts is still adding) of BENCH_INGEST
 *   receipt revisions (default 100,000) and twice as many usage events vs a bare batched INSERT
 *   of the same rows;
 * - ingestion of as many fresh receipt revisions while a maintenance run with a one-month
 *   retention drops the oldest months, vs the receipts ingestion without it, and how long
 *   ingestion statements waited on a lock meanwhile.
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
import { dataSourceOptions } from 'src/database/data-source';
import { runMigrations } from 'src/database/migrate';
import { useCursorKeys } from 'src/common/pagination/cursor';
import { encodeReceiptCursor } from 'src/modules/receipts/receipt-cursor';
import { ReceiptsService } from 'src/modules/receipts/receipts.service';
import { receiptsProjector } from 'src/modules/receipts/receipts.projector';
import { BATCH_LIMIT, monthStart, PROJECT_SHARDS, StreamsService } from 'src/modules/streams/streams.service';
import { EVENT_TOTALS, TOTALS_FIELDS, usageProjector } from 'src/modules/usage/usage.projector';
import { KeysService } from 'src/modules/keys/keys.service';
import { UsageService } from 'src/modules/usage/usage.service';
import { WorkspacesService } from 'src/modules/workspaces/workspaces.service';
import { ReceiptsQueryDto } from 'src/modules/receipts/dto/receipts-query.dto';
import { MetricsService } from 'src/common/metrics/metrics.service';
import { createSuiteDatabase, databaseExists, REDIS_URL } from 'test/support/database';

const ROWS = Number(process.env.BENCH_ROWS ?? 10_000_000);
const INGEST = Number(process.env.BENCH_INGEST ?? 100_000);
const WORKSPACES = 1000;
const BUSY = 'ws_bench_0000';
const DAY = 86_400_000;
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
              CASE WHEN i % 2 = 1 THEN 'completed' ELSE 'in_flight' END, 'allow', 'accepted', 'gateway_observed', 'not_required', 'none', i % 5000, 1, i % 900,
              ${at.replace('i::bigint', '(i / 2 * 2)::bigint')}, ${at}, '{"routing":{"candidates":[]}}'
       FROM generate_series($3::bigint, $4::bigint) i`,
      [from, ROWS, start, end],
    );
    console.log(`seeded ${end + 1} usage events and receipt revisions`);
  }
  // The two big aggregations sort or hash tens of millions of rows: give them memory.
  await ds.transaction(async (m) => {
    await m.query(`SET LOCAL work_mem = '1GB'`);
    await m.query(
      `INSERT INTO usage_rollups (workspace_id, dim, bucket, value, ${TOTALS_FIELDS.join(', ')}, last_ingested_at)
       SELECT workspace_id, d.dim, date_trunc('hour', occurred_at, 'UTC'), d.value, ${TOTALS_FIELDS.map((f) => EVENT_TOTALS[f]).join(', ')}, max(ingested_at)
       FROM usage_events CROSS JOIN LATERAL (VALUES ('kind', kind), ('key', key_id), ('model', model), ('provider', provider), ('tool', tool)) AS d(dim, value)
       GROUP BY 1, 2, 3, 4`,
    );
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

async function ingest(ds: DataSource, redis: RedisClientType, streams: StreamsService, prefix: string, now: Date) {
  const at = (i: number) => new Date(now.getTime() - (i % 1000) * 1000).toISOString();
  const receipts = receiptEntries(now, 'ingest');
  const usage = Array.from({ length: INGEST * 2 }, (_, i) =>
    JSON.stringify({
      event_id: `evt_ingest_${i}`, workspace_id: `ws_bench_${String(i % WORKSPACES).padStart(4, '0')}`, kind: 'llm', key_id: `key_${i % 20}`,
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
    await ds.query(`CREATE TABLE bare_${table} (LIKE ${table})`);
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
    const ds = await new DataSource(dataSourceOptions(kept.url, 2)).initialize();
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
  try {
    await runMigrations(url);
    ds = await new DataSource(dataSourceOptions(url, 10)).initialize();
    let now = new Date();
    if (seeded) {
      const [meta] = await ds.query(`SELECT seeded_at, seed_rows::int AS rows FROM bench_seeded`);
      if (meta.rows !== ROWS) throw new Error(`${seeded} holds a seed of ${meta.rows} rows, not BENCH_ROWS=${ROWS}`);
      now = meta.seeded_at;
      console.log(`copied ${seeded}: ${ROWS} usage events and ${ROWS} receipt revisions across ${WORKSPACES} workspaces, seeded at ${now.toISOString()}`);
    } else {
      await seed(ds, now);
    }

    const usage = new UsageService(ds, null as never, new KeysService(ds, null as never, null as never, null as never, null as never, null as never));
    const window = { from: new Date(now.getTime() - 30 * DAY), to: now };
    const summary = await p95(100, () => usage.summary(BUSY, { window, groupBy: 'model', limit: 50 }));
    const raw = await p95(10, () =>
      ds!.query(
        `SELECT model, ${TOTALS_FIELDS.map((f) => `${EVENT_TOTALS[f]}::text`).join(', ')} FROM usage_events WHERE workspace_id = $1 AND occurred_at >= $2 AND occurred_at < $3 GROUP BY model`,
        [BUSY, window.from, window.to],
      ),
    );
    report('usage summary 30 days, busy ws p95', summary, 'ms', raw, 'baseline: raw GROUP BY over usage_events; target < 50 ms');

    const receipts = new ReceiptsService(ds, null as never, null as never);
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

    const workspaces = new WorkspacesService(ds, null as never, null as never, null as never, null as never, config);
    const streams = new StreamsService(ds, redis, config, new MetricsService(config), workspaces);
    streams.register(receiptsProjector);
    streams.register(usageProjector);
    const rates = await ingest(ds, redis, streams, prefix, now);
    report('ingest receipts, revisions/s', rates.receipts.rate, '/s', rates.receipts.baseline, 'XADD to queryable; baseline: bare batched INSERT; target >= 15000');
    report('ingest usage, events/s', rates.usage.rate, '/s', rates.usage.baseline, 'XADD to queryable; baseline: bare batched INSERT; target >= 30000');
    for (const [stream, r] of Object.entries(rates)) {
      console.log(
        `ingest ${stream}, CPU per 1,000 entries: PostgreSQL backends ${r.postgresCpu.toFixed(0)} ms, consumer (node) ${r.nodeCpu.toFixed(0)} ms, Redis ${r.redisCpu.toFixed(0)} ms, producer ${r.producerCpu.toFixed(0)} ms`,
      );
    }
    console.log(`ingest: batches of ${BATCH_LIMIT}, ${PROJECT_SHARDS} concurrent projection transactions per batch, both streams drained concurrently`);

    const keeper = new StreamsService(ds, redis, { ...config, readModelRetentionMonths: 1 }, new MetricsService(config), workspaces);
    keeper.register(receiptsProjector);
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
