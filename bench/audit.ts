/**
 * The tamper-evident audit trail (issue 19), in one run:
 * 1. What the chain costs a mutation: `POST /keys` (mint: its row, its audit row, the hot-path
 *    write after commit) through HTTP on control in this process, with the chained writer against
 *    the writer of before the chain (one INSERT, no head lock), swapped in place on the same app and
 *    database, in alternating rounds: one caller (latency) and 8 callers on one workspace
 *    (contention on the chain head). Median of BENCH_ROUNDS (3) rounds of BENCH_DURATION_MS (3000).
 * 2. Exporting and verifying BENCH_AUDIT_ROWS (1,000,000) rows of one workspace: control runs as its
 *    own process (`src/main.ts`, V8 heap capped at BENCH_SERVER_HEAP_MB, 192), the export is
 *    streamed to a file, the server's resident memory sampled
 *    every 100 ms; then the verification `audit:verify` runs, in its own process under
 *    `/usr/bin/time` (its time, peak RSS; the CLI's own start-up is left out). A
 *    BENCH_AUDIT_ROWS / 10 export first shows the memory does not grow with the trail.
 * BENCH_AUDIT_PART=mutations|trail runs one part only.
 * Run: `NODE_PATH=. node -r ts-node/register/transpile-only bench/audit.ts` with the PostgreSQL and
 * Redis of `npm test`. Fresh databases are created and dropped.
 */
import { ChildProcess, execFile, spawn } from 'node:child_process';
import { createWriteStream, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { get } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { DataSource } from 'typeorm';
import { Tx } from 'src/database/transaction';
import { newId } from 'src/common/ids/ids';
import { loadConfig } from 'src/config/config';
import { dataSourceOptions } from 'src/database/data-source';
import { runMigrations } from 'src/database/migrate';
import { formatChainTime, linkHash } from 'src/common/crypto/audit-chain';
import { AuditEntry, AuditService } from 'src/modules/audit/audit.service';
import { MAX_AUDIT_EMAIL, MAX_AUDIT_TARGET, sanitizeAuditDetail } from 'src/modules/audit/audit-vocabulary';
import { DevIdentity } from 'src/modules/identity/dev-identity';
import { startBenchApp } from 'bench/in-process-app';
import { createSuiteDatabase, REDIS_URL } from 'test/support/database';
import { median } from 'bench/stats';
import { ENTITIES } from 'src/entities';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 3000);
const ROWS = Number(process.env.BENCH_AUDIT_ROWS ?? 1_000_000);
const ROOT = join(__dirname, '..');
/** The server's V8 heap cap during the export: an export that held rows would fail under it. */
const SERVER_HEAP_MB = Number(process.env.BENCH_SERVER_HEAP_MB ?? 192);

/** The writer as it was before the chain (commit a3663e4): one INSERT, nothing locked. */
async function unchainedRecord(this: unknown, tx: Tx, entry: AuditEntry): Promise<void> {
  const email = entry.actor?.email ?? null;
  await tx.manager.query(
    `INSERT INTO audit_events (id, workspace_id, actor_user_id, actor_email, action, target, detail) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [
      newId('aud'),
      entry.workspaceId,
      entry.actor?.userId ?? null,
      email !== null && email.length <= MAX_AUDIT_EMAIL ? email : null,
      entry.action,
      entry.target !== null && entry.target.length <= MAX_AUDIT_TARGET ? entry.target : null,
      JSON.stringify(sanitizeAuditDetail(entry.detail)),
    ],
  );
}

/** Mints per second from `callers` loops for DURATION_MS, and the median latency. */
async function mintRate(url: string, token: string, callers: number): Promise<{ rate: number; p50: number }> {
  let calls = 0;
  const latencies: number[] = [];
  const end = Date.now() + DURATION_MS;
  const start = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: callers }, async () => {
      while (Date.now() < end) {
        const t0 = process.hrtime.bigint();
        const res = await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ agent_id: `a${calls++}` }) });
        await res.arrayBuffer();
        if (res.status !== 201) throw new Error(`mint answered ${res.status}`);
        latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
      }
    }),
  );
  return { rate: calls / (Number(process.hrtime.bigint() - start) / 1e9), p50: median(latencies) };
}

async function mutationCost(): Promise<string[]> {
  const bench = await startBenchApp(3910);
  try {
    const db = bench.app.get(DataSource);
    // The unchained writer leaves these empty, as before the chain.
    await db.query(`ALTER TABLE audit_events ALTER COLUMN seq DROP NOT NULL, ALTER COLUMN chain_hash DROP NOT NULL`);
    const token = await new DevIdentity(bench.config).token('bench-audit', 'bench@example.com', 3600);
    const me = (await (await fetch(`${bench.base}/api/v1/me`, { headers: { authorization: `Bearer ${token}` } })).json()) as { default_workspace_id: string };
    const url = `${bench.base}/api/v1/workspaces/${me.default_workspace_id}/keys`;
    const chained = AuditService.prototype.record;
    const out: string[] = [];
    for (const callers of [1, 8]) {
      const results: Record<'before' | 'chained', { rate: number; p50: number }[]> = { before: [], chained: [] };
      await mintRate(url, token, callers); // warm-up
      for (let round = 0; round < ROUNDS; round++) {
        for (const variant of ['before', 'chained'] as const) {
          AuditService.prototype.record = variant === 'chained' ? chained : unchainedRecord;
          results[variant].push(await mintRate(url, token, callers));
        }
      }
      AuditService.prototype.record = chained;
      const before = median(results.before.map((r) => r.rate));
      const after = median(results.chained.map((r) => r.rate));
      out.push(`| POST /keys, ${callers} caller${callers > 1 ? 's' : ''}, before the chain | ${before.toFixed(0)} | ${median(results.before.map((r) => r.p50)).toFixed(2)} | 100% |`);
      out.push(`| POST /keys, ${callers} caller${callers > 1 ? 's' : ''}, chained | ${after.toFixed(0)} | ${median(results.chained.map((r) => r.p50)).toFixed(2)} | ${((after / before) * 100).toFixed(0)}% |`);
    }
    return out;
  } finally {
    await bench.close();
  }
}

/** Appends `count` chained rows to `ws`'s trail, 10,000 per statement, as the writer would have. */
async function fillTrail(db: DataSource, ws: string, count: number): Promise<void> {
  const [head]: { seq: string; chain_hash: string }[] = await db.query(`SELECT seq, chain_hash FROM audit_chain_heads WHERE workspace_id = $1`, [ws]);
  let prev = head.chain_hash;
  let seq = Number(head.seq);
  const t0 = Date.parse('2026-01-01T00:00:00Z');
  for (let done = 0; done < count; ) {
    const n = Math.min(10_000, count - done);
    const cols: unknown[][] = [[], [], [], [], [], [], []];
    for (let i = 0; i < n; i++) {
      seq += 1;
      const row = {
        workspace_id: ws, seq, event_id: newId('aud'), actor: { user_id: 'usr_bench', email: 'bench@example.com' }, action: 'key.mint', target: `key_${seq}`,
        detail: { agent_id: `agent-${seq % 97}`, prefix: 'ob_test', last4: 'abcd', tools_mode: 'all', scopes: ['llm', 'mcp'] }, occurred_at: formatChainTime(new Date(t0 + seq)),
      };
      prev = linkHash(prev, row);
      [row.event_id, row.seq, row.target, JSON.stringify(row.detail), new Date(t0 + seq), prev, row.action].forEach((v, c) => cols[c].push(v));
    }
    await db.query(
      `INSERT INTO audit_events (id, workspace_id, seq, actor_user_id, actor_email, target, detail, occurred_at, chain_hash, action)
       SELECT u.id, $8, u.seq, 'usr_bench', 'bench@example.com', u.target, u.detail::jsonb, u.at, u.chain_hash, u.action
       FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::timestamptz[], $6::text[], $7::text[]) AS u(id, seq, target, detail, at, chain_hash, action)`,
      [...cols, ws],
    );
    done += n;
  }
  await db.query(`UPDATE audit_chain_heads SET seq = $2, chain_hash = $3 WHERE workspace_id = $1`, [ws, seq, prev]);
}

const rssOf = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

async function waitFor(url: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`not ready: ${url}`);
}

async function exportAndVerify(): Promise<string[]> {
  const database = await createSuiteDatabase();
  await runMigrations(database.url);
  const port = 3911;
  const base = `http://127.0.0.1:${port}`;
  const env = { PATH: process.env.PATH, NODE_PATH: ROOT, DATABASE_URL: database.url, REDIS_URL, REDIS_PREFIX: `bencha${port}`, DEV_IDENTITY: '1', PUBLIC_URL: base, IDENTITY_ISSUER: `${base}/dev-identity`, LOG_LEVEL: 'error', PORT: String(port), HOST: '127.0.0.1' };
  const server: ChildProcess = spawn(process.execPath, [`--max-old-space-size=${SERVER_HEAP_MB}`, '-r', require.resolve('ts-node/register/transpile-only'), join(ROOT, 'src/main.ts')], { cwd: ROOT, env, stdio: 'ignore' });
  const db = new DataSource(dataSourceOptions(database.url, 2, { entities: ENTITIES }));
  await db.initialize();
  const dir = mkdtempSync(join(tmpdir(), 'bench-audit-'));
  try {
    await waitFor(`${base}/healthz`);
    const token = await new DevIdentity(loadConfig(env)).token('bench-export', 'export@example.com', 3600);
    const me = (await (await fetch(`${base}/api/v1/me`, { headers: { authorization: `Bearer ${token}` } })).json()) as { default_workspace_id: string };
    const ws: string = me.default_workspace_id;
    const keys = join(dir, 'keys.json');
    writeFileSync(keys, await (await fetch(`${base}/.well-known/control-signing-keys.json`)).text());
    const out: string[] = [];
    let filled = 1;
    for (const total of [Math.round(ROWS / 10), ROWS]) {
      const f0 = Date.now();
      await fillTrail(db, ws, total - filled);
      filled = total;
      await db.query(`ANALYZE audit_events`);
      process.stdout.write(`filled ${total} rows in ${((Date.now() - f0) / 1000).toFixed(0)} s\n`);
      const file = join(dir, `export-${total}.ndjson`);
      const rssBefore = rssOf(server.pid!);
      let peak = rssBefore;
      const sampler = setInterval(() => (peak = Math.max(peak, rssOf(server.pid!))), 100);
      const e0 = Date.now();
      await new Promise<void>((resolve, reject) =>
        get(`${base}/api/v1/workspaces/${ws}/audit/export`, { headers: { authorization: `Bearer ${token}` } }, (res) => pipeline(res, createWriteStream(file)).then(resolve, reject)).on('error', reject),
      );
      const exportS = (Date.now() - e0) / 1000;
      clearInterval(sampler);
      // The verification alone (src/modules/audit/audit-export-file.ts, what `audit:verify` runs
      // after loading its keys), in its own process for its peak RSS.
      const script = `const { verifyExportFile, loadKeys } = require('src/modules/audit/audit-export-file');
        const { describeVerification } = require('src/modules/audit/audit-verifier');
        (async () => { const keys = await loadKeys(${JSON.stringify(keys)}); const t0 = Date.now();
          const s = await verifyExportFile(${JSON.stringify(file)}, keys);
          console.log(describeVerification(s)); console.log((Date.now() - t0) / 1000); process.exit(s.ok ? 0 : 1); })();`;
      const verified = await new Promise<{ stdout: string; stderr: string }>((resolve, reject) =>
        execFile('/usr/bin/time', ['-f', '%M', process.execPath, '-r', require.resolve('ts-node/register/transpile-only'), '-e', script], { cwd: ROOT, env }, (error, stdout, stderr) =>
          error ? reject(new Error(`${stdout}${stderr}`)) : resolve({ stdout, stderr }),
        ),
      );
      const maxKb = Number(verified.stderr.trim().split('\n').pop());
      const [summary, seconds] = verified.stdout.trim().split('\n');
      const wall = Number(seconds);
      process.stdout.write(`${summary}\n`);
      const mb = (statSync(file).size / 1024 / 1024).toFixed(0);
      out.push(`| ${total.toLocaleString('en')} rows (${mb} MB) | ${exportS.toFixed(1)} | ${rssBefore.toFixed(0)} | ${peak.toFixed(0)} | ${wall.toFixed(1)} | ${(maxKb / 1024).toFixed(0)} |`);
    }
    return out;
  } finally {
    server.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
    await db.destroy();
    await database.drop();
  }
}

async function main(): Promise<void> {
  const started = new Date().toISOString();
  const part = process.env.BENCH_AUDIT_PART;
  const mutations = part === 'trail' ? [] : await mutationCost();
  const trail = part === 'mutations' ? [] : await exportAndVerify();
  process.stdout.write(
    [
      `${started}, node ${process.version}, rounds ${ROUNDS} x ${DURATION_MS} ms, export server heap capped at ${SERVER_HEAP_MB} MB`,
      '',
      '| Mutation | mints/s | p50 ms | of before |',
      '|---|---|---|---|',
      ...mutations,
      '',
      '| Trail | export s | server RSS before, MB | server RSS peak during export, MB | verify s | verify peak RSS, MB |',
      '|---|---|---|---|---|---|',
      ...trail,
      '',
    ].join('\n'),
  );
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
