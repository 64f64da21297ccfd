/**
 * `npm run bench`: internal key lookup and key listing under 64 concurrent connections, on control
 * built on Express and on Fastify (HTTP_PLATFORM), at the default LOG_LEVEL (info: one access line
 * per request, written to a pipe the bench drains, as a log collector would) and at `warn`, each
 * beside a baseline measured in the same run (bench/baseline.ts: bare node http + the same pg pool
 * and named statements). `BENCH_BEFORE=<dir>`: also the code checked out in `dir` (a `git worktree`
 * of an earlier commit, with this checkout's node_modules linked in), measured in the same rounds.
 * Needs the PostgreSQL and Redis of `npm test` (DATABASE_URL, REDIS_URL). `BENCH_CPU_PROF=<dir>`
 * writes a CPU profile of each control process and of the baseline there (node --cpu-prof). `BENCH_PHASES=lookup,floor,list`
 * (default all three) runs only the phases named, to iterate on one route faster.
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
import { signServiceToken } from 'src/platform/auth/service-token';
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
const FIRST_PORT = 3910;
const BEFORE = process.env.BENCH_BEFORE;
/**
 * Every control process runs at once, against the same database and hot path; only one is under
 * load at a time. The first one (this code, Express) migrates and is the one seeded through.
 */
const VARIANTS = [{ code: 'after', dir: '.' }, ...(BEFORE ? [{ code: 'before', dir: BEFORE }] : [])];
const LEVELS = ['info', 'warn'] as const;
const PLATFORMS = ['express', 'fastify'] as const;
const CONTROLS = VARIANTS.flatMap((variant) => LEVELS.flatMap((level) => PLATFORMS.map((platform) => ({ ...variant, level, platform }))));
const CPU_PROF = process.env.BENCH_CPU_PROF;
const PHASES = new Set((process.env.BENCH_PHASES ?? 'lookup,floor,list').split(',').map((phase) => phase.trim()));
const SECRET = randomBytes(32).toString('hex');
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim());

/** CPU seconds (user + system) a process has used so far, from /proc (Linux). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/** A node process running `script` in `dir`; its stdout (the log lines) is read and dropped, as a log collector reading a pipe would. */
function start(script: string, env: Record<string, string>, options: { profile?: boolean; dir?: string } = {}): ChildProcess {
  const flags = options.profile && CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', CPU_PROF] : [];
  const child = spawn(process.execPath, [...flags, '-r', 'ts-node/register/transpile-only', script], {
    cwd: options.dir ?? '.',
    env: { ...process.env, NODE_PATH: '.', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  child.stdout!.resume();
  return child;
}

async function waitFor(url: string): Promise<void> {
  for (let i = 0; i < 3000; i++) {
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
  const appUrl = `http://127.0.0.1:${FIRST_PORT}`;
  // Every process shares the first one's public URL, so all accept the same dev-identity session.
  const env = {
    HOST: '127.0.0.1',
    DATABASE_URL: url,
    DATABASE_POOL_SIZE: String(POOL_SIZE),
    REDIS_URL,
    REDIS_PREFIX: prefix,
    SERVICE_JWT_SECRET: SECRET,
    DEV_IDENTITY: '1',
    PUBLIC_URL: appUrl,
    IDENTITY_ISSUER: `${appUrl}/dev-identity`,
  };
  const children: ChildProcess[] = [];
  const redis = await createClient({ url: REDIS_URL }).connect();
  try {
    const apps = CONTROLS.map((control, i) => ({ ...control, port: FIRST_PORT + i, url: `http://127.0.0.1:${FIRST_PORT + i}`, child: undefined as unknown as ChildProcess }));
    const launch = (app: (typeof apps)[number]) => {
      app.child = start('src/main.ts', { ...env, PORT: String(app.port), HTTP_PLATFORM: app.platform, LOG_LEVEL: app.level }, { profile: true, dir: app.dir });
      children.push(app.child);
      return waitFor(`${app.url}/healthz`);
    };
    // The first migrates the database alone; the others start together.
    await launch(apps[0]);
    await Promise.all(apps.slice(1).map(launch));
    const baseline = start('bench/baseline.ts', { DATABASE_URL: url, DATABASE_POOL_SIZE: String(POOL_SIZE), PORT: String(BASELINE_PORT) }, { profile: true });
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
    const name = (what: string, app: (typeof apps)[number]) => `${what}: ${app.code}, ${app.platform}, LOG_LEVEL=${app.level}`;
    const phases: Phase[] = [
      ...(PHASES.has('lookup')
        ? [
            ['key lookup: baseline (node http + pg)', baseline, baseUrl, hashes.map((h) => `/keys/${h}`), async () => ({})] as Phase,
            ...apps.map((app): Phase => [name('key lookup', app), app.child, app.url, hashes.map((h) => `/internal/v1/keys/${h}`), serviceAuth]),
          ]
        : []),
      ...(PHASES.has('floor')
        ? apps.filter((app) => app.level === 'info').map((app): Phase => [name('framework floor (GET /healthz, no I/O)', app), app.child, app.url, ['/healthz'], async () => ({})])
        : []),
      ...(PHASES.has('list')
        ? [
            ['key list: baseline (node http + pg)', baseline, baseUrl, [`/workspaces/${listWs}/keys`], async () => ({})] as Phase,
            ...apps.map((app): Phase => [name('key list', app), app.child, app.url, [`/api/v1/workspaces/${listWs}/keys`], async () => auth]),
          ]
        : []),
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

    const byName = new Map(results.map((m) => [m.name, m]));
    const lookupBase = byName.get('key lookup: baseline (node http + pg)');
    const listBase = byName.get('key list: baseline (node http + pg)');
    const pct = (a: number, b: number) => `${Math.round((a / b) * 100)}%`;
    // A baseline is its own reference; the floor is set against the lookup's baseline, '-' when that phase did not run.
    const row = (m: Measure, base: Measure | undefined) =>
      `| ${m.name} | ${Math.round(m.rps)} | ${m.p50} | ${m.p99} | ${base ? pct(m.rps, base.rps) : '-'} | ${base ? (m.p99 / base.p99).toFixed(2) : '-'} | ${Math.round(m.cpuUs)} | ${base ? pct(base.cpuUs, m.cpuUs) : '-'} | ${m.non2xx + m.errors} |`;
    const loadAverage = (avg: number[]) => avg.map((n) => n.toFixed(1)).join(' ');
    const target = (label: string, m: Measure | undefined, base: Measure | undefined, share: number, p99?: number) =>
      m && base
        ? `- ${label}: ${pct(m.rps, base.rps)} of the baseline (target >= ${share * 100}%)${p99 ? `, p99 ${(m.p99 / base.p99).toFixed(2)}x (target <= ${p99}x)` : ''}: ${m.rps >= share * base.rps && (!p99 || m.p99 <= p99 * base.p99) ? 'met' : 'NOT met'}`
        : '';
    const lines = [
      `${new Date().toISOString()}, ${CONNECTIONS} connections, median of ${ROUNDS} rounds of ${DURATION_S} s per phase (after ${WARMUP_S} s warm-up), pg pool ${POOL_SIZE}, node ${process.version}, load average ${loadAverage(load0)} before the rounds, ${loadAverage(loadavg())} after`,
      '',
      '| Phase | req/s | p50 ms | p99 ms | req/s of baseline | p99 / baseline | server CPU us/req | CPU efficiency of baseline | non-2xx + errors |',
      '|---|---|---|---|---|---|---|---|---|',
      ...results.map((m) => row(m, m.name.includes('baseline') ? m : m.name.startsWith('key list') ? listBase : lookupBase)),
      '',
      target('key lookup, Express, default LOG_LEVEL', byName.get('key lookup: after, express, LOG_LEVEL=info'), lookupBase, 0.6, 1.5),
      target('key lookup, Fastify, default LOG_LEVEL', byName.get('key lookup: after, fastify, LOG_LEVEL=info'), lookupBase, 0.9),
      target('key list, Express, default LOG_LEVEL', byName.get('key list: after, express, LOG_LEVEL=info'), listBase, 0.45),
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
