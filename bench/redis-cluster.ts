/**
 * One Redis against a Redis Cluster (issue 34), in the same run:
 *
 * 1. **key lookup** — the gateway's hot-path read: `GET {p}:key:{sha256}` over KEYS key contexts
 *    minted through control's API, CONCURRENCY lookups in flight for DURATION_S seconds, on a
 *    node-redis connection of the matching kind (`createClient` / `createCluster`). (Control's own
 *    `GET /internal/v1/keys/{hash}` reads PostgreSQL and does not depend on the Redis mode.)
 * 2. **ingestion** — ENTRIES usage events XADDed to `{p}:usage` (not timed), then control's
 *    consumer drains them (`StreamsService.drain`, timed): events projected per second.
 *
 * Two controls run in this process on fresh databases: one on the Redis of `npm test` (REDIS_URL),
 * one on a local three-master cluster started for the run (test/support/redis-cluster.ts, no
 * replicas). The phases alternate between the two for ROUNDS rounds; each figure is the median
 * round, and the cluster's is also given as a ratio of the single node's of the same round (the
 * side that goes first alternates).
 *
 *   NODE_PATH=. node -r ts-node/register/transpile-only bench/redis-cluster.ts
 *   BENCH_ROUNDS=1 BENCH_ENTRIES=5000 BENCH_DURATION_S=2 ...   # quick look
 */
import { createHash } from 'node:crypto';
import { loadavg } from 'node:os';
import { createClient, createCluster, RedisClientType, RedisClusterType } from 'redis';
import type { Redis } from 'src/database/redis.module';
import { DevIdentity } from 'src/modules/identity/dev-identity';
import { StreamsService } from 'src/modules/streams/streams.service';
import { BenchApp, startBenchApp } from 'bench/in-process-app';
import { REDIS_URL } from 'test/support/database';
import { RedisCluster } from 'test/support/redis-cluster';
import { usageEvent } from 'test/support/streams';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const ENTRIES = Number(process.env.BENCH_ENTRIES ?? 20_000);
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 5);
const KEYS = Number(process.env.BENCH_KEYS ?? 200);
const CONCURRENCY = 64;
const XADD_CHUNK = 1_000;

const singleNode = (redis: Redis) => redis as RedisClientType;
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)];

interface Side {
  name: string;
  bench: BenchApp;
  /** The gateway's connection. */
  redis: Redis;
  ws: string;
  hashes: string[];
}

/** An operator's default workspace and KEYS keys minted in it through the API; answers their digests. */
async function seed(bench: BenchApp): Promise<{ ws: string; hashes: string[] }> {
  const headers = { Authorization: `Bearer ${await new DevIdentity(bench.config).token('bench-cluster', 'bench@example.com', 3600)}`, 'content-type': 'application/json' };
  const me = (await (await fetch(`${bench.base}/api/v1/me`, { headers })).json()) as { default_workspace_id: string };
  const ws = me.default_workspace_id as string;
  const hashes: string[] = [];
  for (let i = 0; i < KEYS; i++) {
    const res = await fetch(`${bench.base}/api/v1/workspaces/${ws}/keys`, { method: 'POST', headers, body: JSON.stringify({ agent_id: `agent-${i}` }) });
    if (res.status !== 201) throw new Error(`mint: ${res.status} ${await res.text()}`);
    hashes.push(sha256(((await res.json()) as { plaintext: string }).plaintext));
  }
  return { ws, hashes };
}

/** A rate and this process's CPU time per item (microseconds), steadier than the rate on a shared machine. */
interface Measure {
  rate: number;
  cpuUs: number;
}

const cpuSince = (start: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(start);
  return used.user + used.system;
};

/** Lookups per second: CONCURRENCY loops of GET over the side's key contexts for DURATION_S. */
async function lookups(side: Side): Promise<Measure> {
  const names = side.hashes.map((hash) => `${side.bench.config.redisPrefix}:key:${hash}`);
  const until = Date.now() + DURATION_S * 1000;
  let done = 0;
  let missing = 0;
  const started = process.hrtime.bigint();
  const cpu = process.cpuUsage();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async (_, worker) => {
      for (let i = worker; Date.now() < until; i += CONCURRENCY) {
        if ((await side.redis.get(names[i % names.length])) === null) missing++;
        done++;
      }
    }),
  );
  if (missing > 0) throw new Error(`${side.name}: ${missing} lookups missed`);
  return { rate: done / (Number(process.hrtime.bigint() - started) / 1e9), cpuUs: cpuSince(cpu) / done };
}

/** Events projected per second: ENTRIES usage events written, then drained by control's consumer. */
async function ingestion(side: Side): Promise<Measure> {
  const streams = side.bench.app.get(StreamsService);
  const key = streams.streamKey('usage');
  const at = new Date(Date.now() - 60_000).toISOString();
  for (let i = 0; i < ENTRIES; i += XADD_CHUNK) {
    const chunk = Array.from({ length: Math.min(XADD_CHUNK, ENTRIES - i) }, () => JSON.stringify(usageEvent(side.ws, { occurred_at: at })));
    await Promise.all(chunk.map((data) => side.redis.xAdd(key, '*', { data })));
  }
  const started = process.hrtime.bigint();
  const cpu = process.cpuUsage();
  const projected = await streams.drain();
  const cpuUs = cpuSince(cpu) / projected;
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  if (projected !== ENTRIES) throw new Error(`${side.name}: projected ${projected} of ${ENTRIES}`);
  return { rate: projected / seconds, cpuUs };
}

async function main(): Promise<void> {
  const cluster = await RedisCluster.start({ masters: 3 });
  const sides: Side[] = [];
  try {
    const single = await startBenchApp(3421);
    const clustered = await startBenchApp(3422, { REDIS_URL: undefined, REDIS_CLUSTER_NODES: cluster.seeds });
    const singleRedis: RedisClientType = createClient({ url: REDIS_URL });
    const clusterRedis: RedisClusterType = createCluster({ rootNodes: cluster.seeds.split(',').map((url) => ({ url })) });
    await Promise.all([singleRedis.connect(), clusterRedis.connect()]);
    sides.push({ name: 'one Redis', bench: single, redis: singleRedis, ...(await seed(single)) });
    sides.push({ name: 'Redis Cluster (3 masters)', bench: clustered, redis: clusterRedis, ...(await seed(clustered)) });
    // The first pass creates the consumer group; a warm-up round of each phase.
    for (const side of sides) {
      await side.bench.app.get(StreamsService).drain();
      await ingestion({ ...side });
    }

    const load = loadavg().map((l) => l.toFixed(1)).join(' ');
    const results = sides.map(() => ({ lookups: [] as Measure[], ingestion: [] as Measure[] }));
    for (let round = 0; round < ROUNDS; round++) {
      // Which side goes first alternates, so neither always runs right after the other's work.
      const order = round % 2 === 0 ? [0, 1] : [1, 0];
      for (const i of order) results[i].lookups.push(await lookups(sides[i]));
      for (const i of order) results[i].ingestion.push(await ingestion(sides[i]));
    }
    const ratios = (phase: 'lookups' | 'ingestion') => results[1][phase].map((value, round) => value.rate / results[0][phase][round].rate);
    const rates = (side: number, phase: 'lookups' | 'ingestion') => median(results[side][phase].map((m) => m.rate));
    const cpu = (side: number, phase: 'lookups' | 'ingestion') => median(results[side][phase].map((m) => m.cpuUs)).toFixed(1);

    console.log(`\n${new Date().toISOString()}, ${ROUNDS} rounds, ${KEYS} keys, ${CONCURRENCY} lookups in flight for ${DURATION_S} s, ${ENTRIES} usage events per ingestion, node ${process.version}, load average ${load} before the rounds, ${loadavg().map((l) => l.toFixed(1)).join(' ')} after\n`);
    console.log('| Phase | one Redis | Redis Cluster | cluster / one (median of rounds) | per round | CPU us per item (this process), one / cluster |');
    console.log('|---|---|---|---|---|---|');
    for (const [phase, label, unit] of [['lookups', 'key lookup (gateway GET)', 'lookups/s'], ['ingestion', 'ingestion (usage, drain)', 'events/s']] as const) {
      const r = ratios(phase);
      console.log(`| ${label} | ${Math.round(rates(0, phase))} ${unit} | ${Math.round(rates(1, phase))} ${unit} | ${median(r).toFixed(2)} | ${r.map((x) => x.toFixed(2)).join(', ')} | ${cpu(0, phase)} / ${cpu(1, phase)} |`);
    }
  } finally {
    for (const side of sides) {
      // The shared Redis keeps nothing of the run (the cluster goes away whole).
      if (side.redis === sides[0].redis) for await (const names of singleNode(side.redis).scanIterator({ MATCH: `${side.bench.config.redisPrefix}:*`, COUNT: 1000 })) for (const name of names) await side.redis.del(name);
      side.redis.destroy();
      await side.bench.close();
    }
    await cluster.stop();
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
