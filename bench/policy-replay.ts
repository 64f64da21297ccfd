/**
 * Policy replay benchmark: `NODE_PATH=. node -r ts-node/register/transpile-only bench/policy-replay.ts`.
 * 10,000 recorded decisions (receipt revisions carrying `envelope.authorization`, written straight
 * into the read model) replayed against a 100-policy draft:
 * 1. `POST /policy/replay` through the API (read, evaluate in the compiler's worker, compare);
 * 2. the seam alone (`PolicyCompiler.evaluate` on the same requests, no database), with 2 slots
 *    (the default: chunks on both workers) and with 1 (one worker);
 * 3. the limit: cedar-wasm's own `isAuthorized` in one loop on the main thread (it parses the
 *    policy set on every call; timed on 1000 requests and scaled), and `statefulIsAuthorized` on
 *    a policy set parsed once (what the worker runs), same requests and source, same run.
 * Also: how long a compile waits while a replay runs (compiles take the slot of the next chunk to finish).
 * Needs the PostgreSQL and Redis of `npm test`. BENCH_ITERATIONS (default 3) sets the samples per row (medians).
 */
import { isAuthorized, preparsePolicySet, statefulIsAuthorized } from '@cedar-policy/cedar-wasm/nodejs';
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { DataSource } from 'typeorm';
import { DevIdentity } from 'src/modules/identity/dev-identity';
import { AuthorizationRequest, EVALUATION_CHUNK, PolicyCompiler } from 'src/modules/policy/policy.compiler';
import { startBenchApp } from 'bench/in-process-app';
import { median } from 'bench/stats';

const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 3);
/** `isAuthorized` parses the whole policy set on every call: timed on this many requests, its rate scaled. */
const RAW_SAMPLE = 1000;
const DECISIONS = 10000;
const POLICIES = 100;
const PORT = 3904;
const TOOL_CALL = 'Gateway::Action::"tool.call"';

/** 100 policies: a permit per tool connector and a forbid for every tenth, each reading an attribute. */
function draft(): string {
  const lines: string[] = [];
  for (let i = 0; i < POLICIES; i++) {
    lines.push(
      i % 10 === 9
        ? `@id("forbid-${i}") forbid (principal, action == ${TOOL_CALL}, resource) when { resource.connector == "c${i - 9}" && context.env == "prod" };`
        : `@id("permit-${i}") permit (principal, action == ${TOOL_CALL}, resource) when { resource.connector == "c${i}" && resource.name like "*tool*" };`,
    );
  }
  return lines.join('\n') + '\n';
}

function request(ws: string, i: number): AuthorizationRequest & { decision: 'allow' | 'deny' } {
  const inWs = [{ type: 'Gateway::Workspace', id: ws }];
  const key = `key_${i % 50}`;
  const tool = `c${i % 100}.tool_${i % 7}`;
  return {
    principal: { type: 'Gateway::Key', id: key },
    action: { type: 'Gateway::Action', id: 'tool.call' },
    resource: { type: 'Gateway::Tool', id: tool },
    context: { env: i % 3 === 0 ? 'prod' : 'dev', surface: 'mcp' },
    entities: [
      { uid: { type: 'Gateway::Key', id: key }, attrs: {}, parents: inWs },
      { uid: { type: 'Gateway::Tool', id: tool }, attrs: { name: tool, connector: `c${i % 100}` }, parents: inWs },
    ],
    decision: i % 2 === 0 ? 'allow' : 'deny',
  };
}

const rate = (n: number, ms: number) => Math.round((n * 1000) / ms);

async function main(): Promise<void> {
  const source = draft();
  const { app, config, base, close } = await startBenchApp(PORT);
  const rows: string[] = [];
  try {
    const headers = { Authorization: `Bearer ${await new DevIdentity(config).token('bench-replay', 'bench@example.com', 3600)}`, 'content-type': 'application/json' };
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${base}/api/v1${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
      return res.json() as Promise<Record<string, any>>;
    };
    const ws = (await call('GET', '/me')).default_workspace_id as string;
    const requests = Array.from({ length: DECISIONS }, (_, i) => request(ws, i));
    // The read model as ingestion leaves it: one revision and one head per receipt, the newest a second apart.
    const now = Date.now();
    const db = app.get(DataSource);
    for (let at = 0; at < DECISIONS; at += 1000) {
      const chunk = requests.slice(at, at + 1000);
      const times = chunk.map((_, i) => new Date(now - (at + i) * 1000).toISOString());
      const ids = chunk.map((_, i) => `bench${at + i}`);
      await db.query(
        `INSERT INTO receipt_revisions (workspace_id, invocation_id, receipt_revision, receipt_id, tool, key_id, state, decision, dispatch_state,
           evidence_trust, verification_state, verification_method, attempt_count, occurred_at, updated_at, envelope)
         SELECT $1, 'inv_' || id, 1, 'rcp_' || id, tool, key, 'completed', d, 'accepted', 'gateway_observed', 'not_required', 'none', 1, at, at,
                jsonb_build_object('authorization', auth)
         FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::timestamptz[], $7::jsonb[]) AS t(id, tool, key, d, at, auth)`,
        [ws, ids, chunk.map((r) => r.resource.id), chunk.map((r) => r.principal.id), chunk.map((r) => r.decision), times, chunk.map((r) => JSON.stringify({ ...r, policy_revision_id: null, determining_policies: [] }))],
      );
      await db.query(
        `INSERT INTO receipt_heads (invocation_id, workspace_id, receipt_id, receipt_revision, tool, key_id, state, decision, dispatch_state,
           evidence_trust, verification_state, verification_method, attempt_count, occurred_at, updated_at)
         SELECT invocation_id, workspace_id, receipt_id, 1, tool, key_id, state, decision, dispatch_state, evidence_trust, verification_state,
                verification_method, attempt_count, occurred_at, updated_at
         FROM receipt_revisions WHERE workspace_id = $1 AND receipt_id = ANY($2)`,
        [ws, ids.map((id) => `rcp_${id}`)],
      );
    }
    await db.query('ANALYZE receipt_revisions, receipt_heads');

    await call('PUT', `/workspaces/${ws}/policy`, { cedar_text: source });
    const check = await call('POST', `/workspaces/${ws}/policy/replay`, { limit: DECISIONS }); // warm-up and check
    if (check.evaluated !== DECISIONS) throw new Error(`replayed ${check.evaluated} of ${DECISIONS}`);
    const api: number[] = [];
    for (let i = 0; i < ITERATIONS; i++) {
      const start = performance.now();
      await call('POST', `/workspaces/${ws}/policy/replay`, { limit: DECISIONS });
      api.push(performance.now() - start);
    }

    // A compile issued while a replay runs waits at most one chunk (it is never refused: compiles come first).
    const waits: number[] = [];
    for (let i = 0; i < ITERATIONS; i++) {
      const replay = call('POST', `/workspaces/${ws}/policy/replay`, { limit: DECISIONS });
      await new Promise((resolve) => setTimeout(resolve, 50));
      const start = performance.now();
      await call('POST', `/workspaces/${ws}/policy/test`, {});
      waits.push(performance.now() - start);
      await replay;
    }

    // The seam with the default POLICY_COMPILER_CONCURRENCY (2: both workers evaluate), and with
    // one slot (one worker: how replay ran before chunks were spread over the slots).
    const shared = [{ uid: { type: 'Gateway::Workspace', id: ws }, attrs: { env: 'dev' }, parents: [] }];
    const seamWith = async (slots: number) => {
      const compiler = new PolicyCompiler(slots);
      const samples: number[] = [];
      try {
        await compiler.evaluate('warm', source, shared, requests.slice(0, 10));
        for (let i = 0; i < ITERATIONS; i++) {
          const start = performance.now();
          await compiler.evaluate(`k${i}`, source, shared, requests);
          samples.push(performance.now() - start);
        }
      } finally {
        await compiler.close();
      }
      return samples;
    };
    const seam = await seamWith(2);
    const oneWorker = await seamWith(1);

    // The limits, on the main thread: `isAuthorized` (the policy set parsed on every call) and
    // `statefulIsAuthorized` on a policy set parsed once (what the worker runs).
    const raw: number[] = [];
    for (let i = 0; i < ITERATIONS; i++) {
      const start = performance.now();
      for (const r of requests.slice(0, RAW_SAMPLE)) {
        const answer = isAuthorized({ principal: r.principal, action: r.action, resource: r.resource, context: r.context as never, entities: [...r.entities, ...shared] as never, policies: { staticPolicies: source } });
        if (answer.type !== 'success') throw new Error('bench request refused');
      }
      raw.push(((performance.now() - start) * DECISIONS) / RAW_SAMPLE);
    }
    if (preparsePolicySet('bench', { staticPolicies: source }).type !== 'success') throw new Error('bench policy does not parse');
    const stateful: number[] = [];
    for (let i = 0; i < ITERATIONS; i++) {
      const start = performance.now();
      for (const r of requests) {
        const answer = statefulIsAuthorized({ principal: r.principal, action: r.action, resource: r.resource, context: r.context as never, entities: [...r.entities, ...shared] as never, preparsedPolicySetId: 'bench' });
        if (answer.type !== 'success') throw new Error('bench request refused');
      }
      stateful.push(performance.now() - start);
    }

    const testAlone: number[] = [];
    for (let i = 0; i < ITERATIONS; i++) {
      const start = performance.now();
      await call('POST', `/workspaces/${ws}/policy/test`, {});
      testAlone.push(performance.now() - start);
    }

    const row = (name: string, samples: number[]) =>
      `| ${name} | ${median(samples).toFixed(0)} ms | ${rate(DECISIONS, median(samples))}/s | ${(median(raw) / median(samples)).toFixed(2)} | ${(median(stateful) / median(samples)).toFixed(2)} |`;
    rows.push(row('`POST /policy/replay` (API: read, evaluate in the worker, compare)', api));
    rows.push(row('seam alone (`PolicyCompiler.evaluate`, 2 slots: both workers)', seam));
    rows.push(row('seam alone, 1 slot (one worker)', oneWorker));
    rows.push(row('`isAuthorized` loop, main thread (parses the policy set per call)', raw));
    rows.push(row('`statefulIsAuthorized` loop, main thread (policy set parsed once)', stateful));
    rows.push('');
    rows.push(`\`POST /policy/test\` (${POLICIES}-policy draft): ${median(testAlone).toFixed(1)} ms alone, ${median(waits).toFixed(1)} ms median while a replay runs (max ${Math.max(...waits).toFixed(1)} ms)`);
    rows.push(
      `one chunk (${EVALUATION_CHUNK} requests, the longest a compile waits for a slot): ${((median(oneWorker) * EVALUATION_CHUNK) / DECISIONS).toFixed(1)} ms on one worker, against ${median(testAlone).toFixed(1)} ms for a whole \`test\``,
    );
  } finally {
    await close();
  }
  process.stdout.write(
    [
      `${new Date().toISOString()}, ${DECISIONS} decisions, ${POLICIES}-policy draft, median of ${ITERATIONS}, node ${process.version}, load average ${loadavg()[0].toFixed(1)} on ${cpus().length} cores`,
      '',
      '| Replay of 10,000 decisions | time | decisions/s | rate / `isAuthorized` loop | rate / `statefulIsAuthorized` loop |',
      '|---|---|---|---|---|',
      ...rows,
      '',
    ].join('\n'),
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
