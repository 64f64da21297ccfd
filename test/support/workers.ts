import { createHash } from 'node:crypto';
import { Role } from 'src/common/access/actions';
import { bearer, Operator, TestApp } from 'test/support/app';

export type Method = 'get' | 'post' | 'patch';

export interface RouteCase {
  method: Method;
  /** The path for a workspace id. */
  path: (ws: string) => string;
  body?: object;
  /** The weakest role the route's action needs. */
  minRole: Role;
  /** True for `agentops.read` routes, still granted in a frozen workspace. */
  read: boolean;
}

const BELOW: Record<Role, Role | null> = { viewer: null, developer: 'viewer', admin: 'developer', owner: 'admin' };

export function call(t: TestApp, method: Method, path: string, op?: Operator, body?: object) {
  let req = t.http()[method](path);
  if (op) req = req.set(bearer(op));
  return body === undefined ? req : req.send(body);
}

/**
 * The authorization matrix of one route on `owner`'s workspace: 401 without a session, 404 for a
 * non-member identical to a missing workspace, 403 for the role below the minimum, 409 when frozen
 * (reads still answer). `members` holds one operator per role in the workspace.
 */
export async function expectMatrix(t: TestApp, owner: Operator, members: Record<Role, Operator>, route: RouteCase): Promise<void> {
  const ws = owner.workspaceId;
  const noSession = await call(t, route.method, route.path(ws), undefined, route.body);
  expect([noSession.status, noSession.body]).toEqual([401, { detail: 'session required' }]);

  const stranger = await t.signIn();
  const nonMember = await call(t, route.method, route.path(ws), stranger, route.body);
  const missing = await call(t, route.method, route.path('ws_000000000000000000000000'), stranger, route.body);
  expect([nonMember.status, nonMember.body]).toEqual([404, { detail: 'workspace not found' }]);
  expect([missing.status, missing.body]).toEqual([404, { detail: 'workspace not found' }]);

  const below = BELOW[route.minRole];
  if (below) {
    const res = await call(t, route.method, route.path(ws), members[below], route.body);
    expect([res.status, res.body]).toEqual([403, { detail: 'action not permitted' }]);
  }

  await t.db.query(`UPDATE workspaces SET frozen = true WHERE id = $1`, [ws]);
  try {
    const res = await call(t, route.method, route.path(ws), members[route.minRole], route.body);
    if (route.read) expect(res.status).toBe(200);
    else expect([res.status, res.body]).toEqual([409, { detail: 'workspace is frozen' }]);
  } finally {
    await t.db.query(`UPDATE workspaces SET frozen = false WHERE id = $1`, [ws]);
  }
}

/** One operator per role in `owner`'s workspace (the owner itself for `owner`). */
export async function roleMembers(t: TestApp, owner: Operator): Promise<Record<Role, Operator>> {
  return {
    viewer: await t.member(owner, 'viewer'),
    developer: await t.member(owner, 'developer'),
    admin: await t.member(owner, 'admin'),
    owner,
  };
}

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
