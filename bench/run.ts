/**
 * `npm run bench`: internal key lookup and key listing under 64 concurrent connections, on control
 * built on Express and on Fastify (HTTP_PLATFORM), each beside a baseline measured in the same run
 * (bench/baseline.ts: bare node http + the same pg pool and named statements). Needs the
 * PostgreSQL and Redis of `npm test` (DATABASE_URL, REDIS_URL). `BENCH_CPU_PROF=<dir>` writes a
 * CPU profile of each control process there (node --cpu-prof).
 * Phases alternate baseline and control for BENCH_ROUNDS rounds (default 3) of BENCH_DURATION_S
 * seconds (default 10); each row reports the median round, so a burst of load from elsewhere on
 * the machine skews one round, not the result.
 */
import autocannon from 'autocannon';
import { createClient } from 'redis';
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { signServiceToken } from 'src/common/auth/service-token';
import { loadConfig } from 'src/config/config';
import { DevIdentity } from 'src/modules/identity/dev-identity';
import { createSuiteDatabase, REDIS_URL } from 'test/support/database';

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const WARMUP_S = 3;
const CONNECTIONS = 64;
const POOL_SIZE = 10;
const LOOKUP_KEYS = 200;
const LISTED_KEYS = 20;
const BASELINE_PORT = 3901;
/** Both platforms run at once, against the same database and hot path; only one is under load at a time. */
const PLATFORMS = [
  { platform: 'express', port: 3900 },
  { platform: 'fastify', port: 3902 },
] as const;
const CPU_PROF = process.env.BENCH_CPU_PROF;
const SECRET = randomBytes(32).toString('hex');
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim());

/** CPU seconds (user + system) a process has used so far, from /proc (Linux). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

function start(script: string, env: Record<string, string>, profile = false): ChildProcess {
  const flags = profile && CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', CPU_PROF] : [];
  return spawn(process.execPath, [...flags, '-r', 'ts-node/register/transpile-only', script], {
    env: { ...process.env, NODE_PATH: '.', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

async function waitFor(url: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    try {
      if ((await fetch(url)).status < 500) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not come up`);
}

async function call(url: string, init: RequestInit & { expect: number }): Promise<any> {
  const res = await fetch(url, { ...init, headers: { 'content-type': 'application/json', ...init.headers } });
  if (res.status !== init.expect) throw new Error(`${init.method ?? 'GET'} ${url}: ${res.status} ${await res.text()}`);
  return res.json();
}

interface Measure {
  name: string;
  rps: number;
  /** Server CPU time per request: what the server costs, whatever else runs on the machine. */
  cpuUs: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

async function load(name: string, server: ChildProcess, base: string, paths: string[], headers: Record<string, string>, duration: number): Promise<Measure> {
  let i = 0;
  const cpuBefore = cpuSeconds(server.pid!);
  const result = await autocannon({
    url: base,
    connections: CONNECTIONS,
    duration,
    headers,
    requests: [{ method: 'GET', setupRequest: (req: any) => ({ ...req, path: paths[i++ % paths.length] }) }],
  });
  const cpuUs = ((cpuSeconds(server.pid!) - cpuBefore) * 1e6) / Math.max(1, result.requests.total);
  return { name, rps: result.requests.average, cpuUs, p50: result.latency.p50, p99: result.latency.p99, non2xx: result.non2xx, errors: result.errors };
}

async function main(): Promise<void> {
  const database = await createSuiteDatabase();
  const prefix = `bench${randomBytes(4).toString('hex')}`;
  const url = database.url;
  const appUrl = `http://127.0.0.1:${PLATFORMS[0].port}`;
  // The Fastify process shares the Express one's public URL, so both accept the same dev-identity session.
  const env = {
    PORT: String(PLATFORMS[0].port),
    HOST: '127.0.0.1',
    DATABASE_URL: url,
    DATABASE_POOL_SIZE: String(POOL_SIZE),
    REDIS_URL,
    REDIS_PREFIX: prefix,
    SERVICE_JWT_SECRET: SECRET,
    DEV_IDENTITY: '1',
    PUBLIC_URL: appUrl,
    IDENTITY_ISSUER: `${appUrl}/dev-identity`,
    LOG_LEVEL: 'warn',
  };
  const children: ChildProcess[] = [];
  const redis = await createClient({ url: REDIS_URL }).connect();
  try {
    const apps = PLATFORMS.map(({ platform, port }) => {
      const child = start('src/main.ts', { ...env, PORT: String(port), HTTP_PLATFORM: platform }, true);
      children.push(child);
      return { platform, child, url: `http://127.0.0.1:${port}` };
    });
    for (const { url: base } of apps) await waitFor(`${base}/healthz`);
    const baseline = start('bench/baseline.ts', { DATABASE_URL: url, DATABASE_POOL_SIZE: String(POOL_SIZE), PORT: String(BASELINE_PORT) });
    children.push(baseline);
    const baseUrl = `http://127.0.0.1:${BASELINE_PORT}`;
    await waitFor(baseUrl);

    // Seed through the API: one workspace with the looked-up keys, one with a typical list.
    const session = await new DevIdentity(loadConfig(env)).token('bench-operator', 'bench@example.com', 3600);
    const auth = { Authorization: `Bearer ${session}` };
    const me = await call(`${appUrl}/api/v1/me`, { headers: auth, expect: 200 });
    const lookupWs = me.default_workspace_id as string;
    const listWs = (await call(`${appUrl}/api/v1/workspaces`, { method: 'POST', headers: auth, body: JSON.stringify({ org_id: me.workspaces[0].org_id, slug: 'listed' }), expect: 201 })).id as string;
    const hashes: string[] = [];
    for (let i = 0; i < LOOKUP_KEYS; i++) {
      const key = await call(`${appUrl}/api/v1/workspaces/${lookupWs}/keys`, { method: 'POST', headers: auth, body: JSON.stringify({ agent_id: `agent-${i}`, rpm: 600 }), expect: 201 });
      hashes.push(sha256(key.plaintext));
    }
    for (let i = 0; i < LISTED_KEYS; i++) {
      await call(`${appUrl}/api/v1/workspaces/${listWs}/keys`, { method: 'POST', headers: auth, body: JSON.stringify({ agent_id: `listed-${i}` }), expect: 201 });
    }
    const held = await redis.exists(hashes.map((h) => `${prefix}:key:${h}`));
    if (held !== hashes.length) throw new Error(`hot path holds ${held} of ${hashes.length} keys`);

    const serviceAuth = async () => ({ Authorization: `Bearer ${await signServiceToken(SECRET, 'gateway', 'control', 300)}` });
    type Phase = [string, ChildProcess, string, string[], () => Promise<Record<string, string>>];
    const onEach = (what: string, paths: string[], headers: () => Promise<Record<string, string>>): Phase[] =>
      apps.map(({ platform, child, url: base }) => [`${what.replace('{platform}', platform)}`, child, base, paths, headers]);
    const phases: Phase[] = [
      ['key lookup: baseline (node http + pg)', baseline, baseUrl, hashes.map((h) => `/keys/${h}`), async () => ({})],
      ...onEach('key lookup: control on {platform}, GET /internal/v1/keys/{hash}', hashes.map((h) => `/internal/v1/keys/${h}`), serviceAuth),
      ...onEach('framework floor: control on {platform}, GET /healthz (no I/O)', ['/healthz'], async () => ({})),
      ['key list: baseline (node http + pg)', baseline, baseUrl, [`/workspaces/${listWs}/keys`], async () => ({})],
      ...onEach('key list: control on {platform}, GET /api/v1/workspaces/{ws}/keys', [`/api/v1/workspaces/${listWs}/keys`], async () => auth),
    ];
    const load0 = loadavg();
    const rounds: Measure[][] = phases.map(() => []);
    for (const [name, server, base, paths, headers] of phases) await load(name, server, base, paths, await headers(), WARMUP_S);
    for (let round = 0; round < ROUNDS; round++) {
      for (const [index, [name, server, base, paths, headers]] of phases.entries()) {
        const measured = await load(name, server, base, paths, await headers(), DURATION_S);
        process.stderr.write(`round ${round + 1}, ${name}: ${Math.round(measured.rps)} req/s, p99 ${measured.p99} ms, ${Math.round(measured.cpuUs)} us CPU/req\n`);
        rounds[index].push(measured);
      }
    }
    const results = rounds.map((list) => [...list].sort((a, b) => a.rps - b.rps)[Math.floor(list.length / 2)]);

    const [lookupBase, lookupExpress, lookupFastify, floorExpress, floorFastify, listBase, listExpress, listFastify] = results;
    const pct = (a: number, b: number) => `${Math.round((a / b) * 100)}%`;
    const row = (m: Measure, base?: Measure) =>
      `| ${m.name} | ${Math.round(m.rps)} | ${m.p50} | ${m.p99} | ${base ? pct(m.rps, base.rps) : '100%'} | ${Math.round(m.cpuUs)} | ${base ? pct(base.cpuUs, m.cpuUs) : '100%'} | ${m.non2xx + m.errors} |`;
    const loadAverage = (avg: number[]) => avg.map((n) => n.toFixed(1)).join(' ');
    const lines = [
      `${new Date().toISOString()}, ${CONNECTIONS} connections, median of ${ROUNDS} rounds of ${DURATION_S} s per phase (after ${WARMUP_S} s warm-up), pg pool ${POOL_SIZE}, node ${process.version}, load average ${loadAverage(load0)} before the rounds, ${loadAverage(loadavg())} after`,
      '',
      '| Phase | req/s | p50 ms | p99 ms | req/s of baseline | server CPU us/req | CPU efficiency of baseline | non-2xx + errors |',
      '|---|---|---|---|---|---|---|---|',
      row(lookupBase),
      row(lookupExpress, lookupBase),
      row(lookupFastify, lookupBase),
      row(floorExpress, lookupBase),
      row(floorFastify, lookupBase),
      row(listBase),
      row(listExpress, listBase),
      row(listFastify, listBase),
      '',
      `Key lookup target on Express (>= 50% of the baseline's rate): ${lookupExpress.rps >= 0.5 * lookupBase.rps ? 'met' : 'NOT met'} (${pct(lookupExpress.rps, lookupBase.rps)}); on Fastify: ${pct(lookupFastify.rps, lookupBase.rps)} of the baseline`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await Promise.all(
      children.map((child) => {
        const exited = new Promise((resolve) => (child.exitCode !== null ? resolve(null) : child.once('exit', resolve)));
        child.kill('SIGTERM');
        return Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000))]);
      }),
    );
    let cursor = '0';
    do {
      const { cursor: next, keys: names } = await redis.scan(cursor, { MATCH: `${prefix}:*`, COUNT: 1000 });
      if (names.length > 0) await redis.del(names);
      cursor = next;
    } while (cursor !== '0');
    redis.destroy();
    await database.drop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
