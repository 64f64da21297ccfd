import { Role } from 'src/platform/access/actions';
import { bearer, Operator, TestApp } from 'test/support/app';

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

export interface RouteCase {
  method: Method;
  /** The path for a workspace id. */
  path: (ws: string) => string;
  body?: object;
  /** The weakest role the route's action needs. */
  minRole: Role;
  /** A read (`workspace.read`): still answered in a frozen workspace. */
  read: boolean;
}

const BELOW: Record<Role, Role | null> = { viewer: null, developer: 'viewer', admin: 'developer', owner: 'admin' };

export function call(t: TestApp, method: Method, path: string, op?: Operator, body?: object) {
  let req = t.http()[method](path);
  if (op) req = req.set(bearer(op));
  return body === undefined ? req : req.send(body);
}

/** One operator per role in `owner`'s workspace (the owner itself for `owner`). */
export async function roleMembers(t: TestApp, owner: Operator): Promise<Record<Role, Operator>> {
  return { viewer: await t.member(owner, 'viewer'), developer: await t.member(owner, 'developer'), admin: await t.member(owner, 'admin'), owner };
}

/**
 * The authorization matrix of one route on `owner`'s workspace: 401 without a session, 404 for a
 * non-member identical to a missing workspace, 403 for the role just below the minimum, and in a
 * frozen workspace 409 for a write (a read still answers 200). Returns nothing; every status is asserted.
 */
export async function expectAccessMatrix(t: TestApp, owner: Operator, members: Record<Role, Operator>, route: RouteCase): Promise<void> {
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
