/** What the policy replay benchmarks share (bench/policy-replay.ts, bench/policy-replay-memory.ts): the recorded decisions, the 100-policy draft, a timed replay. */
import { performance } from 'node:perf_hooks';
import { DataSource } from 'typeorm';
import { AuthorizationRequest } from 'src/modules/policy/policy.compiler';

const TOOL_CALL = 'Gateway::Action::"tool.call"';

export type RecordedRequest = AuthorizationRequest & { decision: 'allow' | 'deny' };

export const POLICIES = 100;

/** 100 policies: a permit per tool connector and a forbid for every tenth, each reading an attribute. */
export function draft(): string {
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

/**
 * The i-th recorded decision. Recorded traffic repeats (50 keys, 100 connectors, 7 tools, 3
 * contexts: 2,100 distinct requests in 10,000); `distinct` gives every decision a key of its own,
 * so no two requests are identical (the worst case for the seam, which evaluates identical
 * requests once).
 */
export function request(ws: string, i: number, distinct: boolean): RecordedRequest {
  const inWs = [{ type: 'Gateway::Workspace', id: ws }];
  const key = distinct ? `key_${i}` : `key_${i % 50}`;
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

/** `set` as the read model keeps it after ingestion: one revision and one head per receipt, the newest at `newest`, a second apart. */
export async function seedDecisions(db: DataSource, ws: string, set: RecordedRequest[], newest: number, prefix: string): Promise<void> {
  for (let at = 0; at < set.length; at += 1000) {
    const chunk = set.slice(at, at + 1000);
    const times = chunk.map((_, i) => new Date(newest - (at + i) * 1000).toISOString());
    const ids = chunk.map((_, i) => `${prefix}${at + i}`);
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
}

/**
 * One `POST /policy/replay` of `window` through `call`, which must evaluate `expected` decisions:
 * its time and the peak growth of this process's heap meanwhile (sampled every 5 ms, garbage
 * included).
 */
export async function timedReplay(
  call: (method: string, path: string, body?: unknown) => Promise<Record<string, any>>,
  ws: string,
  window: object,
  expected: number,
): Promise<{ ms: number; heap: number }> {
  const before = process.memoryUsage().heapUsed;
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().heapUsed)), 5);
  const start = performance.now();
  const answer = await call('POST', `/workspaces/${ws}/policy/replay`, window).finally(() => clearInterval(sampler));
  const ms = performance.now() - start;
  if (answer.evaluated !== expected) throw new Error(`replayed ${answer.evaluated} of ${expected}`);
  return { ms, heap: peak - before };
}
