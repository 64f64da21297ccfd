import { bearer, Operator, startTestApp, TestApp } from 'test/support/app';
import { freezeWorkspace } from 'test/support/factories';

describe('workspace members', () => {
  let t: TestApp;
  let owner: Operator;
  beforeAll(async () => {
    t = await startTestApp();
    owner = await t.signIn('members-owner');
  });
  afterAll(() => t.close());

  const url = (userId = '', ws = owner.workspaceId) => `/api/v1/workspaces/${ws}/members${userId ? `/${userId}` : ''}`;

  it('grants a role to a signed-in user, lists members in order and audits the grant', async () => {
    const user = await t.signIn('members-dev');
    const res = await t.http().put(url(user.userId)).set(bearer(owner)).send({ role: 'developer' }).expect(200);
    expect(res.body).toEqual({ user_id: user.userId, email: user.email, role: 'developer', created_at: expect.stringMatching(/Z$/) });
    const list = await t.http().get(url()).set(bearer(user)).expect(200);
    expect(list.body.members.map((m: { user_id: string; role: string }) => [m.user_id, m.role])).toEqual([
      [owner.userId, 'owner'],
      [user.userId, 'developer'],
    ]);
    const [audit] = await t.db.query(`SELECT action, target, detail FROM audit_events WHERE workspace_id = $1 AND action = 'membership.grant'`, [owner.workspaceId]);
    expect(audit).toEqual({ action: 'membership.grant', target: user.userId, detail: { status: 'developer' } });
  });

  it('changes a role in place', async () => {
    const user = await t.member(owner, 'viewer');
    await t.http().put(url(user.userId)).set(bearer(owner)).send({ role: 'admin' }).expect(200);
    const [row] = await t.db.query(`SELECT role FROM workspace_members WHERE workspace_id = $1 AND user_id = $2`, [owner.workspaceId, user.userId]);
    expect(row.role).toBe('admin');
  });

  it('answers 404 user not found for an id that never signed in, writing nothing', async () => {
    const before = await t.db.query(`SELECT count(*)::int AS n FROM audit_events`);
    const res = await t.http().put(url('usr_000000000000000000000000')).set(bearer(owner)).send({ role: 'viewer' }).expect(404);
    expect(res.body).toEqual({ detail: 'user not found' });
    expect(await t.db.query(`SELECT count(*)::int AS n FROM audit_events`)).toEqual(before);
  });

  it('answers 422 for a bad role or an extra field', async () => {
    const user = await t.signIn();
    const bad = await t.http().put(url(user.userId)).set(bearer(owner)).send({ role: 'superuser' }).expect(422);
    expect(bad.body.detail).toEqual([expect.objectContaining({ loc: ['body', 'role'], type: 'enum' })]);
    const extra = await t.http().put(url(user.userId)).set(bearer(owner)).send({ role: 'viewer', admin: true }).expect(422);
    expect(extra.body.detail).toEqual([{ loc: ['body', 'admin'], msg: 'extra fields not permitted', type: 'extra_forbidden' }]);
    await t.http().put(url(user.userId)).set(bearer(owner)).send({}).expect(422);
  });

  it('keeps an owner: demoting or removing the last owner is 409', async () => {
    const o = await t.signIn();
    const demote = await t.http().put(url(o.userId, o.workspaceId)).set(bearer(o)).send({ role: 'admin' }).expect(409);
    expect(demote.body).toEqual({ detail: 'workspace must keep an owner' });
    const remove = await t.http().delete(url(o.userId, o.workspaceId)).set(bearer(o)).expect(409);
    expect(remove.body).toEqual({ detail: 'workspace must keep an owner' });
    const second = await t.member(o, 'owner');
    await t.http().delete(url(o.userId, o.workspaceId)).set(bearer(second)).expect(204);
    const rows = await t.db.query(`SELECT user_id FROM workspace_members WHERE workspace_id = $1`, [o.workspaceId]);
    expect(rows).toEqual([{ user_id: second.userId }]);
  });

  it('two owners demoting each other concurrently cannot leave the workspace without an owner', async () => {
    const a = await t.signIn();
    const b = await t.member(a, 'owner');
    const results = await Promise.all([
      t.http().put(url(b.userId, a.workspaceId)).set(bearer(a)).send({ role: 'viewer' }),
      t.http().put(url(a.userId, a.workspaceId)).set(bearer(b)).send({ role: 'viewer' }),
    ]);
    // The loser is re-authorized under the workspace lock and is no longer an owner.
    expect(results.map((r) => r.status).sort()).toEqual([200, 403]);
    const [{ owners }] = await t.db.query(`SELECT count(*)::int AS owners FROM workspace_members WHERE workspace_id = $1 AND role = 'owner'`, [a.workspaceId]);
    expect(owners).toBe(1);
  });

  it('removes a member (204), audits it, and answers 404 member not found after', async () => {
    const user = await t.member(owner, 'developer');
    await t.http().delete(url(user.userId)).set(bearer(owner)).expect(204);
    const gone = await t.http().delete(url(user.userId)).set(bearer(owner)).expect(404);
    expect(gone.body).toEqual({ detail: 'member not found' });
    await t.http().get(`/api/v1/workspaces/${owner.workspaceId}`).set(bearer(user)).expect(404);
    const [audit] = await t.db.query(`SELECT detail FROM audit_events WHERE workspace_id = $1 AND action = 'membership.revoke' AND target = $2`, [owner.workspaceId, user.userId]);
    expect(audit.detail).toEqual({ status: 'developer' });
  });

  it('authorizes: 401, 404 for non-members, 403 below owner, 409 frozen', async () => {
    const o = await t.signIn();
    const admin = await t.member(o, 'admin');
    const target = await t.signIn();
    await t.http().put(url(target.userId, o.workspaceId)).send({ role: 'viewer' }).expect(401);
    await t.http().put(url(target.userId, o.workspaceId)).set(bearer(target)).send({ role: 'viewer' }).expect(404);
    await t.http().put(url(target.userId, o.workspaceId)).set(bearer(admin)).send({ role: 'viewer' }).expect(403);
    await t.http().delete(url(admin.userId, o.workspaceId)).set(bearer(admin)).expect(403);
    await freezeWorkspace(t, o.workspaceId);
    await t.http().put(url(target.userId, o.workspaceId)).set(bearer(o)).send({ role: 'viewer' }).expect(409, { detail: 'workspace is frozen' });
    await t.http().delete(url(admin.userId, o.workspaceId)).set(bearer(o)).expect(409, { detail: 'workspace is frozen' });
    await t.http().get(url('', o.workspaceId)).set(bearer(admin)).expect(200);
  });
});
