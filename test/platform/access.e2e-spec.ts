import { ACTION_MIN_ROLE, FROZEN_ALLOWED, ROLES, WorkspaceAction } from 'src/platform/access/actions';
import { WorkspaceAccess } from 'src/platform/access/workspace-access.service';
import { ApiError } from 'src/common/http/errors';
import { bearer, Operator, startTestApp, TestApp } from 'test/support/app';
import { freezeWorkspace } from 'test/support/factories';

const ALLOWED: Record<WorkspaceAction, string[]> = {
  'workspace.read': ['viewer', 'developer', 'admin', 'owner'],
  'audit.read': ['viewer', 'developer', 'admin', 'owner'],
  'usage.read': ['viewer', 'developer', 'admin', 'owner'],
  'agentops.read': ['viewer', 'developer', 'admin', 'owner'],
  'key.manage': ['developer', 'admin', 'owner'],
  'policy.draft': ['developer', 'admin', 'owner'],
  'change.propose': ['developer', 'admin', 'owner'],
  'connection.manage': ['admin', 'owner'],
  'policy.publish': ['admin', 'owner'],
  'routing.publish': ['admin', 'owner'],
  'pricing.write': ['admin', 'owner'],
  'approval.decide': ['admin', 'owner'],
  'notification.manage': ['admin', 'owner'],
  'change.apply': ['admin', 'owner'],
  'membership.manage': ['owner'],
  'approval.policy.manage': ['owner'],
};

describe('workspace access: membership 404, role 403, frozen 409', () => {
  let t: TestApp;
  let owner: Operator;
  const members: Record<string, Operator> = {};
  beforeAll(async () => {
    t = await startTestApp();
    owner = await t.signIn();
    members.owner = owner;
    for (const role of ['viewer', 'developer', 'admin'] as const) members[role] = await t.member(owner, role);
  });
  afterAll(() => t.close());

  const decide = async (op: Operator, action: WorkspaceAction, workspaceId = owner.workspaceId) => {
    try {
      await t.app.get(WorkspaceAccess).authorize(workspaceId, { userId: op.userId, email: op.email }, action);
      return 200;
    } catch (error) {
      return (error as ApiError).getStatus();
    }
  };

  it('grants every action exactly to the roles of the role table', async () => {
    expect(Object.keys(ALLOWED).sort()).toEqual(Object.keys(ACTION_MIN_ROLE).sort());
    for (const action of Object.keys(ALLOWED) as WorkspaceAction[]) {
      for (const role of ROLES) {
        expect([action, role, await decide(members[role], action)]).toEqual([action, role, ALLOWED[action].includes(role) ? 200 : 403]);
      }
    }
  });

  it('answers 404 before 403 for a non-member, for every action', async () => {
    const stranger = await t.signIn();
    for (const action of Object.keys(ALLOWED) as WorkspaceAction[]) expect(await decide(stranger, action)).toBe(404);
  });

  it('answers 409 in a frozen workspace for every action but the reads, after the role check', async () => {
    const o = await t.signIn();
    const viewer = await t.member(o, 'viewer');
    await freezeWorkspace(t, o.workspaceId);
    for (const action of Object.keys(ALLOWED) as WorkspaceAction[]) {
      expect([action, await decide(o, action, o.workspaceId)]).toEqual([action, FROZEN_ALLOWED.has(action) ? 200 : 409]);
      expect([action, await decide(viewer, action, o.workspaceId)]).toEqual([action, ALLOWED[action].includes('viewer') ? 200 : 403]);
    }
  });

  it('applies the same order through HTTP', async () => {
    const o = await t.signIn();
    const developer = await t.member(o, 'developer');
    const stranger = await t.signIn();
    const put = (op: Operator) => t.http().put(`/api/v1/workspaces/${o.workspaceId}/members/${developer.userId}`).set(bearer(op)).send({ role: 'admin' });
    expect((await put(stranger)).body).toEqual({ detail: 'workspace not found' });
    const forbidden = await put(developer).expect(403);
    expect(forbidden.body).toEqual({ detail: 'action not permitted' });
    expect(forbidden.headers['cache-control']).toBe('no-store');
    await freezeWorkspace(t, o.workspaceId);
    expect((await put(o).expect(409)).body).toEqual({ detail: 'workspace is frozen' });
    expect((await put(developer).expect(403)).body).toEqual({ detail: 'action not permitted' });
  });

  it('re-reads membership under the mutation lock: a role lost after the guard ran is honoured', async () => {
    const o = await t.signIn();
    const admin = await t.member(o, 'admin');
    const access = t.app.get(WorkspaceAccess);
    const ctx = await access.authorize(o.workspaceId, { userId: o.userId, email: o.email }, 'membership.manage');
    // The owner is demoted after the guard passed but before the mutation takes the lock.
    const setRole = (userId: string, role: string) => t.http().put(`/api/v1/workspaces/${o.workspaceId}/members/${userId}`).set(bearer(o)).send({ role }).expect(200);
    await setRole(admin.userId, 'owner');
    await setRole(o.userId, 'admin');
    await expect(access.mutate(ctx, async () => 'written')).rejects.toMatchObject({ detail: 'action not permitted' });
    await freezeWorkspace(t, o.workspaceId);
    const adminCtx = await access.authorize(o.workspaceId, { userId: admin.userId, email: admin.email }, 'workspace.read');
    await expect(access.mutate({ ...adminCtx, action: 'membership.manage' }, async () => 'written')).rejects.toMatchObject({ detail: 'workspace is frozen' });
  });
});
