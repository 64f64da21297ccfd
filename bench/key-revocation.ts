/**
 * Key revocation bench (issue 22): how fast a revoked key leaves the gateway's hot path.
 *
 * 1. **Redis up**: KEYS keys minted through the API, half of them rotated (two digests each), then
 *    revoked one after another; for each, the time from the revoke's 200 until every digest of the
 *    key is absent from Redis (polled on a separate connection). Baseline in the same run: the bench
 *    DELs a key itself and polls the same way (the floor of this measurement: one round trip).
 * 2. **Outage**: as many keys again (half rotated), Redis taken away behind a TCP proxy, every key
 *    revoked (each answers 200; its digests stay pending), the outage held OUTAGE_S seconds, Redis
 *    brought back; then the time until each digest is absent and until the database has nothing
 *    pending. Baseline: the time until control's own Redis client is ready again (nothing can land
 *    before that). Lost = digests still present 30 s after Redis returned.
 *
 * Control runs in this process with its jobs (the key-sync job every 2 s), on a fresh database and
 * Redis prefix, and needs the PostgreSQL and Redis of `npm test`.
 *
 *   NODE_PATH=. node -r ts-node/register/transpile-only bench/key-revocation.ts
 *   BENCH_KEYS=100 BENCH_OUTAGE_S=10 ...   # quicker
 */
import { createHash, randomBytes } from 'node:crypto';
import { createClient, RedisClientType } from 'redis';
import { DataSource } from 'typeorm';
import { createApp } from 'src/bootstrap';
import { loadConfig } from 'src/config/config';
import { REDIS } from 'src/database/redis.module';
import { DevIdentity } from 'src/modules/identity/dev-identity';
import { createSuiteDatabase, REDIS_URL } from 'test/support/database';
import { TcpProxy } from 'test/support/tcp-proxy';

const KEYS = Number(process.env.BENCH_KEYS ?? 200);
const OUTAGE_S = Number(process.env.BENCH_OUTAGE_S ?? 30);
const PORT = Number(process.env.BENCH_PORT ?? 3411);
const LOST_AFTER_MS = 30_000;

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const quantile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
};
const ms = (value: number) => value.toFixed(value < 10 ? 2 : 0);

async function main(): Promise<void> {
  const proxy = await TcpProxy.start(REDIS_URL);
  const database = await createSuiteDatabase();
  const base = `http://127.0.0.1:${PORT}`;
  const prefix = `benchrev${randomBytes(4).toString('hex')}`;
  const config = loadConfig({
    ...process.env, PORT: String(PORT), DATABASE_URL: database.url, REDIS_URL: proxy.url, REDIS_PREFIX: prefix,
    DEV_IDENTITY: '1', PUBLIC_URL: base, IDENTITY_ISSUER: `${base}/dev-identity`, LOG_LEVEL: 'error',
  });
  const app = await createApp(config, { url: database.url, poolSize: config.databasePoolSize, stop: () => Promise.resolve() }, { jobs: true });
  await app.listen(PORT, '127.0.0.1');
  const redis: RedisClientType = createClient({ url: REDIS_URL });
  await redis.connect();
  const appRedis = app.get<RedisClientType>(REDIS);
  const dataSource = app.get(DataSource);
  try {
    const headers = { Authorization: `Bearer ${await new DevIdentity(config).token('bench-revocation', 'bench@example.com', 3600)}`, 'content-type': 'application/json' };
    const call = async (method: string, path: string, body?: object) => {
      const res = await fetch(`${base}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
      return res.json() as Promise<Record<string, unknown>>;
    };
    const ws = (await call('GET', '/api/v1/me')).default_workspace_id as string;
    const keysPath = `/api/v1/workspaces/${ws}/keys`;
    const name = (secret: string) => `${prefix}:key:${sha256(secret)}`;

    /** KEYS keys, every other one rotated: key id and the Redis names of its digests. */
    const seed = async () => {
      const keys: { id: string; names: string[] }[] = [];
      for (let i = 0; i < KEYS; i++) {
        const minted = await call('POST', keysPath, { agent_id: `bench-${i}` });
        const names = [name(minted.plaintext as string)];
        if (i % 2 === 1) names.push(name((await call('POST', `${keysPath}/${minted.key_id}/rotate`, { grace_seconds: 3600 })).plaintext as string));
        keys.push({ id: minted.key_id as string, names });
      }
      const present = await redis.exists(keys.flatMap((k) => k.names));
      if (present !== keys.flatMap((k) => k.names).length) throw new Error(`only ${present} digests on the hot path after seeding`);
      return keys;
    };
    const untilAbsent = async (names: string[]) => {
      while ((await redis.exists(names)) > 0) await new Promise((resolve) => setImmediate(resolve));
    };

    // Phase 1: Redis up.
    const up = await seed();
    const revokeToAbsence: number[] = [];
    const floor: number[] = [];
    let presentAtAnswer = 0;
    for (const key of up) {
      await call('POST', `${keysPath}/${key.id}/revoke`, {});
      const answered = performance.now();
      if ((await redis.exists(key.names)) > 0) presentAtAnswer++;
      await untilAbsent(key.names);
      revokeToAbsence.push(performance.now() - answered);

      const probe = `${prefix}:probe`;
      await redis.set(probe, '1');
      await redis.del(probe);
      const deleted = performance.now();
      await untilAbsent([probe]);
      floor.push(performance.now() - deleted);
    }

    // Phase 2: an outage of OUTAGE_S seconds.
    const down = await seed();
    await proxy.stop();
    const revokeDuringOutage: number[] = [];
    for (const key of down) {
      const started = performance.now();
      await call('POST', `${keysPath}/${key.id}/revoke`, {});
      revokeDuringOutage.push(performance.now() - started);
    }
    const pendingKeys = async () =>
      Number((await dataSource.query(`SELECT count(*) AS n FROM virtual_keys WHERE workspace_id = $1 AND hot_path_pending`, [ws]))[0].n);
    const pendingAtOutage = await pendingKeys();
    const stillPresent = await redis.exists(down.flatMap((k) => k.names));
    await sleep(OUTAGE_S * 1000);
    await proxy.start();
    const back = performance.now();
    let ready = -1;
    const landed = new Map<string, number>();
    const names = down.flatMap((k) => k.names);
    while (landed.size < names.length && performance.now() - back < LOST_AFTER_MS) {
      if (ready < 0 && appRedis.isReady) ready = performance.now() - back;
      const present = await Promise.all(names.map((n) => (landed.has(n) ? Promise.resolve(0) : redis.exists(n))));
      const now = performance.now() - back;
      present.forEach((p, i) => {
        if (p === 0 && !landed.has(names[i])) landed.set(names[i], now);
      });
      await sleep(10);
    }
    const convergence = [...landed.values()];
    const lost = names.length - landed.size;
    while ((await pendingKeys()) > 0 && performance.now() - back < LOST_AFTER_MS) await sleep(10);
    const settled = performance.now() - back;
    const pendingLeft = await pendingKeys();

    const row = (label: string, values: number[]) => `| ${label} | ${values.length} | ${ms(quantile(values, 0.5))} | ${ms(quantile(values, 0.99))} | ${ms(Math.max(...values))} |`;
    console.log(`\nkey revocation, ${new Date().toISOString()}, ${KEYS} keys per phase (every other one rotated: ${Math.ceil(KEYS * 1.5)} digests), outage ${OUTAGE_S} s, node ${process.version}\n`);
    console.log('| Measure (ms) | n | p50 | p99 | max |\n|---|---|---|---|---|');
    console.log(row("Redis up: revoke's 200 to every digest absent", revokeToAbsence));
    console.log(row('baseline: own DEL reply to absent (one poll round trip)', floor));
    console.log(row('outage: revoke answered (Redis refused)', revokeDuringOutage));
    console.log(row('outage: Redis back to each digest absent', convergence.length > 0 ? convergence : [NaN]));
    console.log(`\n- p99 revoke-to-absence / baseline p99: ${(quantile(revokeToAbsence, 0.99) / quantile(floor, 0.99)).toFixed(2)}`);
    console.log(`- Redis up: revokes whose first poll after the 200 still found a digest: ${presentAtAnswer} of ${up.length} (the delete runs after commit, before the answer)`);
    console.log(`- digests still in Redis during the outage (all revoked): ${stillPresent} of ${names.length}`);
    console.log(`- control's Redis client ready again after ${ms(ready)} ms (baseline); last digest absent after ${ms(Math.max(...convergence))} ms (${(Math.max(...convergence) / ready).toFixed(2)} x the reconnection)`);
    console.log(`- keys pending in the database: ${pendingAtOutage} during the outage, ${pendingLeft} after ${ms(settled)} ms`);
    console.log(`- lost (still present ${LOST_AFTER_MS / 1000} s after Redis returned): ${lost}`);
  } finally {
    redis.destroy();
    await app.close();
    await proxy.stop();
    await database.drop();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
