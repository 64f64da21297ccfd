import { createHash } from 'node:crypto';
import { Operator, TestApp } from 'test/support/app';
import { call } from 'test/support/access-matrix';

/** An agent passport: mints a virtual key for `agentId` through the keys route. */
export async function mintPassport(t: TestApp, op: Operator, agentId: string): Promise<{ key_id: string }> {
  const res = await call(t, 'post', `/api/v1/workspaces/${op.workspaceId}/keys`, op, { agent_id: agentId });
  expect(res.status).toBe(201);
  return res.body;
}

/** Canonical JSON written independently of the product: keys sorted at every depth, no whitespace. */
export function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

const BODY_FIELDS = ['instructions', 'runtime_adapter', 'model_constraints', 'environment_requests', 'connections', 'session_profile_ids', 'output_contract'];

/** The revision digest of a revision document, computed from its fields as the spec describes. */
export function digestOf(revision: Record<string, unknown>): string {
  const body = Object.fromEntries(BODY_FIELDS.filter((f) => f in revision).map((f) => [f, revision[f]]));
  const parts = {
    allowed_capabilities: revision.allowed_capabilities,
    body,
    execution_mode: revision.execution_mode,
    limits: revision.limits,
    permission_preset: (revision.permission_preset as { preset: string }).preset,
    ui_actions: revision.ui_actions,
  };
  return `sha256:${createHash('sha256').update(canonical(parts), 'utf8').digest('hex')}`;
}
