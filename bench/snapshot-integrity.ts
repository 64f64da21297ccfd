/**
 * Signed snapshots benchmark (issue 18): `NODE_PATH=. node -r ts-node/register/transpile-only bench/snapshot-integrity.ts`.
 * One workspace with 200 tool connections, 100 model connections, 500 route qualifiers and a
 * ~100 KB published policy. Same run, alternating rounds:
 *   1. publish (stage + build + digest + sign + keep + hot path) with signing, and with the
 *      signature replaced by a constant (the digest is kept: it is the content address);
 *   2. GET /internal/v1/workspaces/{ws}/snapshot answered 304 (matching If-None-Match) against the
 *      full 200 fetch, autocannon in this process, BENCH_CONNECTIONS (default 8) connections;
 *   3. GET /api/v1/workspaces/{ws}/publication with 500 reporting instances, sequential, p50/p95.
 * Needs the PostgreSQL and Redis of `npm test`. BENCH_ITERATIONS (default 60) publishes per round,
 * BENCH_DURATION (default 3) seconds per load round.
 */
import autocannon from 'autocannon';
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { DataSource } from 'typeorm';
import { signServiceToken } from 'src/platform/auth/service-token';
import { ControlSigning } from 'src/platform/signing/control-signing.service';
import { DevIdentity } from 'src/modules/identity/dev-identity';
import { PublicationService } from 'src/modules/publication/publication.service';
import { startBenchApp } from 'bench/in-process-app';
import { seedSnapshotRows } from 'bench/snapshot-rows';
import { percentile } from 'bench/stats';

const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 60);
const DURATION = Number(process.env.BENCH_DURATION ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 8);
const PORT = 3904;
const SECRET = randomBytes(32).toString('hex');
const [TOOLS, MODELS, QUALIFIERS, INSTANCES] = [200, 100, 500, 500];

const fmt = (ms: number) => ms.toFixed(2);

/** A ~100 KB Cedar policy: many small forbid rules, each with an annotation. */
function bigPolicy(): string {
  const rules = ['permit (principal, action, resource);'];
  for (let i = 0; rules.join('\n').length < 100_000; i++) {
    rules.push(`@id("deny-bench-${i}")\nforbid (principal, action == Gateway::Action::"tool.call", resource == Gateway::Tool::"bench_tool_${i}.delete_everything");`);
  }
  return rules.join('\n');
}

async function main(): Promise<void> {
  process.env.SERVICE_JWT_SECRET = SECRET;
  const { app, config, base, close } = await startBenchApp(PORT);
  const rows: string[] = [];
  let header = '';
  try {
    const token = await new DevIdentity(config).token('bench-integrity', 'bench@example.com', 3600);
    const auth = { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' };
    const me = (await (await fetch(`${base}/api/v1/me`, { headers: auth })).json()) as { default_workspace_id: string };
    const ws = me.default_workspace_id;
    const db = app.get(DataSource);
    await seedSnapshotRows(db, ws, { qualifiers: QUALIFIERS, targetsPerQualifier: 4, models: MODELS, tools: TOOLS });
    const cedar = bigPolicy();
    const draft = await fetch(`${base}/api/v1/workspaces/${ws}/policy`, { method: 'PUT', headers: auth, body: JSON.stringify({ cedar_text: cedar }) });
    if (!draft.ok) throw new Error(`draft: ${draft.status} ${await draft.text()}`);
    const { draft_hash } = (await draft.json()) as { draft_hash: string };
    const published = await fetch(`${base}/api/v1/workspaces/${ws}/policy/publish`, { method: 'POST', headers: auth, body: JSON.stringify({ expected_draft_hash: draft_hash }) });
    if (!published.ok) throw new Error(`publish: ${published.status} ${await published.text()}`);

    const publications = app.get(PublicationService);
    const signing = app.get(ControlSigning);
    const signDetached = signing.signDetached.bind(signing);
    const unsigned = () => ({ kid: 'unsigned', signature: 'unsigned' });
    const publishOnce = async () => {
      await db.query(`UPDATE workspaces SET snapshot_version = snapshot_version + 1 WHERE id = $1`, [ws]);
      if (!(await publications.publish(ws))) throw new Error('publish failed');
    };
    for (let i = 0; i < 5; i++) await publishOnce(); // warm-up
    const withSig: number[] = [];
    const withoutSig: number[] = [];
    for (let round = 0; round < 3; round++) {
      for (const [samples, sign] of [[withSig, signDetached], [withoutSig, unsigned]] as const) {
        signing.signDetached = sign;
        for (let i = 0; i < ITERATIONS; i++) {
          const start = performance.now();
          await publishOnce();
          samples.push(performance.now() - start);
        }
      }
    }
    signing.signDetached = signDetached;
    await publishOnce();
    const serviceToken = await signServiceToken(SECRET, 'gateway', 'control', 300);
    const full = await fetch(`${base}/internal/v1/workspaces/${ws}/snapshot`, { headers: { Authorization: `Bearer ${serviceToken}` } });
    const body = await full.text();
    const etag = full.headers.get('etag')!;
    header = `${new Date().toISOString()}, ${TOOLS} tool connections, ${MODELS} models, ${QUALIFIERS} qualifiers, ${cedar.length} B policy, snapshot ${body.length} B, node ${process.version}`;
    const mean = (s: number[]) => s.reduce((a, b) => a + b, 0) / s.length;
    rows.push(`| publish, signed (p50 / mean) | ${fmt(percentile(withSig, 50))} / ${fmt(mean(withSig))} ms | |`);
    rows.push(`| publish, signature replaced by a constant (p50 / mean) | ${fmt(percentile(withoutSig, 50))} / ${fmt(mean(withoutSig))} ms | signing adds ${((mean(withSig) / mean(withoutSig) - 1) * 100).toFixed(1)}% |`);

    const load = async (headers: Record<string, string>) =>
      (await autocannon({ url: `${base}/internal/v1/workspaces/${ws}/snapshot`, connections: CONNECTIONS, duration: DURATION, headers })) as { requests: { average: number }; non2xx: number; '2xx': number };
    const rates = { full: [] as number[], cached: [] as number[] };
    for (let round = 0; round < 3; round++) {
      const f = await load({ Authorization: `Bearer ${serviceToken}` });
      const c = await load({ Authorization: `Bearer ${serviceToken}`, 'If-None-Match': etag });
      if (f.non2xx > 0) throw new Error(`full fetch answered ${f.non2xx} non-2xx`);
      rates.full.push(f.requests.average);
      rates.cached.push(c.requests.average);
    }
    const [fullRate, cachedRate] = [mean(rates.full), mean(rates.cached)];
    rows.push(`| GET snapshot, full 200 | ${fullRate.toFixed(0)} req/s | |`);
    rows.push(`| GET snapshot, 304 (If-None-Match) | ${cachedRate.toFixed(0)} req/s | ${(cachedRate / fullRate).toFixed(1)}x the full fetch |`);

    const [{ digest }] = await db.query(`SELECT v.digest FROM snapshot_versions v JOIN workspaces w ON w.id = v.workspace_id AND v.version = w.published_version WHERE w.id = $1`, [ws]);
    await db.query(
      `INSERT INTO snapshot_instances (workspace_id, instance_id, version, digest, applied_at, reported_at)
       SELECT $1, 'gw-' || i, 1, CASE WHEN i % 10 = 0 THEN 'sha256:old' ELSE $2 END, now(), CASE WHEN i % 50 = 0 THEN now() - interval '1 hour' ELSE now() END FROM generate_series(1, $3) i`,
      [ws, digest, INSTANCES],
    );
    // Baseline: the workspace document, the same session and membership checks, one row.
    const view: number[] = [];
    const baseline: number[] = [];
    const get = (path: string) => fetch(`${base}/api/v1/workspaces/${ws}${path}`, { headers: auth }).then(async (r) => (await r.json()) as { instances?: unknown[] });
    for (let i = 0; i < 20; i++) await Promise.all([get('/publication'), get('')]);
    for (let i = 0; i < 300; i++) {
      for (const [samples, path] of [[view, '/publication'], [baseline, '']] as const) {
        const start = performance.now();
        const parsed = await get(path);
        samples.push(performance.now() - start);
        if (path && parsed.instances?.length !== INSTANCES) throw new Error('rollout view incomplete');
      }
    }
    rows.push(`| GET publication (rollout view, ${INSTANCES} instances), p50 / p95 | ${fmt(percentile(view, 50))} / ${fmt(percentile(view, 95))} ms | |`);
    rows.push(`| baseline: GET workspace (same auth), p50 / p95 | ${fmt(percentile(baseline, 50))} / ${fmt(percentile(baseline, 95))} ms | view p95 ${(percentile(view, 95) / percentile(baseline, 95)).toFixed(1)}x |`);
  } finally {
    await close();
  }
  process.stdout.write([header, '', '| Measure | Result | Ratio |', '|---|---|---|', ...rows, ''].join('\n'));
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
