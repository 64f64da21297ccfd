import { randomBytes } from 'node:crypto';
import { Response } from 'supertest';
import { PublicationService } from 'src/modules/publication/publication.service';
import { signServiceToken } from 'src/platform/auth/service-token';
import { bearer, Operator, SERVICE_SECRET, startTestApp, TestApp } from 'test/support/app';
import { expireApproval, freezeWorkspace } from 'test/support/factories';
import { lockWaiters, openTransaction } from 'test/support/locks';

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const rule = (over: Record<string, unknown> = {}) => ({
  rule_id: 'refunds',
  effect: 'allow',
  actions: ['tool.call'],
  tools: ['stripe.*'],
  environments: ['prod'],
  approver_roles: ['owner'],
  approver_user_ids: [] as string[],
  quorum: 1,
  ...over,
});

const heldCall = (over: Record<string, unknown> = {}) => ({
  request_id: `req_${randomBytes(8).toString('hex')}`,
  key_id: 'key_0123456789abcdef01234567',
  invocation_id: `inv_${randomBytes(8).toString('hex')}`,
  tool: 'stripe.refund',
  invocation_tool: 'stripe.refund',
  connection_id: 'conn_0123456789abcdef01234567',
  env: 'prod',
  safe_summary: { amount_usd: 125.5 },
  reason: 'refund above the unattended threshold',
  ...over,
});

describe('approvals', () => {
  let t: TestApp;
  let outsider: Operator;

  beforeAll(async () => {
    t = await startTestApp();
    outsider = await t.signIn();
  });
  afterAll(() => t.close());

  const serviceAuth = async () => ({ Authorization: `Bearer ${await signServiceToken(SERVICE_SECRET, 'gateway', 'control')}` });
  /** A held call from the gateway; with `status`, asserts it. */
  const hold = async (ws: string, body: Record<string, unknown>, status?: number): Promise<Response> => {
    const req = t.http().post(`/internal/v1/workspaces/${ws}/approvals`).set(await serviceAuth()).send(body);
    return status === undefined ? await req : await req.expect(status);
  };
  const report = async (ws: string, id: string, body: Record<string, unknown>): Promise<Response> =>
    await t.http().post(`/internal/v1/workspaces/${ws}/approvals/${id}/execution`).set(await serviceAuth()).send(body);
  const inbox = (ws: string) => `/api/v1/workspaces/${ws}/approvals`;
  const get = (op: Operator, id: string, ws = op.workspaceId) => t.http().get(`${inbox(ws)}/${id}`).set(bearer(op));
  const list = (op: Operator, query: Record<string, string | number> = {}, ws = op.workspaceId) => t.http().get(inbox(ws)).query(query).set(bearer(op));
  const vote = (op: Operator, id: string, body: Record<string, unknown>, ws = op.workspaceId) => t.http().post(`${inbox(ws)}/${id}/votes`).set(bearer(op)).send(body);
  const approve = (op: Operator, id: string, revision: number) => vote(op, id, { decision: 'approve', reason: 'looks right', expected_revision: revision });
  const createPolicy = async (op: Operator, rules: Record<string, unknown>[], name = `p-${randomBytes(3).toString('hex')}`) =>
    (await t.http().post(`/api/v1/workspaces/${op.workspaceId}/approval-policies`).set(bearer(op)).send({ name, rules }).expect(200)).body;
  /** A held call that opens a pending approval. */
  const pending = async (op: Operator, over: Record<string, unknown> = {}) => (await hold(op.workspaceId, heldCall(over), 201)).body;
  const count = async (sql: string, params: unknown[]) => Number((await t.db.query(sql, params))[0].n);
  const voteRows = (id: string) => count(`SELECT count(*) AS n FROM approval_votes WHERE approval_id = $1`, [id]);
  const expire = (id: string) => expireApproval(t, id);
  const stored = async (id: string) => (await t.db.query(`SELECT status, decision_reason, execution_status, revision FROM approvals WHERE id = $1`, [id]))[0];
  const revise = (op: Operator, policyId: string, rules: Record<string, unknown>[], expected: number) =>
    t.http().put(`/api/v1/workspaces/${op.workspaceId}/approval-policies/${policyId}`).set(bearer(op)).send({ name: 'revised', rules, expected_revision: expected });
  /** Holds the workspace row lock (the one every workspace mutation takes) on a connection of its own until `end`. */
  const lockWorkspace = async (workspaceId: string) => {
    const holder = await openTransaction(t.db);
    await holder.query(`SELECT 1 FROM workspaces WHERE id = $1 FOR UPDATE`, [workspaceId]);
    return holder;
  };
  /** Starts a supertest request now (a supertest request is sent only once awaited). */
  const start = (request: PromiseLike<Response>): Promise<Response> => Promise.resolve(request);

  describe('held calls (gateway)', () => {
    let owner: Operator;
    let policy: { policy_id: string; revision_id: string };
    beforeAll(async () => {
      owner = await t.signIn();
      policy = await createPolicy(owner, [rule(), rule({ rule_id: 'github', tools: ['github.*'] })]);
    });

    it('answers 201 with a pending approval holding the matched rules, the policy-set hash, the quorum and a 900 s expiry', async () => {
      const body = heldCall();
      const res = await hold(owner.workspaceId, body, 201);
      expect(res.body).toEqual({
        schema_version: 1,
        approval_id: expect.stringMatching(/^apr_[0-9a-f]{24}$/),
        workspace_id: owner.workspaceId,
        key_id: body.key_id,
        request_id: body.request_id,
        invocation_id: body.invocation_id,
        tool: 'stripe.refund',
        invocation_tool: 'stripe.refund',
        connection_id: body.connection_id,
        env: 'prod',
        safe_summary: { amount_usd: 125.5 },
        reason: body.reason,
        decision_status: 'pending',
        decision_reason: 'awaiting_quorum',
        execution_status: 'not_requested',
        revision: 1,
        created_at: expect.stringMatching(RFC3339),
        expires_at: expect.stringMatching(RFC3339),
        decided_at: null,
        executed_at: null,
        policy_snapshot: {
          policy_set_hash: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
          rules: [{ policy_id: policy.policy_id, revision_id: policy.revision_id, ...rule() }],
        },
        votes: [],
        result: { receipt_id: null, error_code: null, digest: null },
        quorum_required: 1,
        approvals_received: 0,
      });
      expect(Date.parse(res.body.expires_at) - Date.parse(res.body.created_at)).toBe(900_000);
      const snapshot = await t.app.get(PublicationService).build(owner.workspaceId);
      expect((snapshot!.approval_rules as { policy_set_hash: string }).policy_set_hash).toBe(res.body.policy_snapshot.policy_set_hash);
    });

    it('answers 200 with the existing approval for a repeated request_id, also when sent concurrently', async () => {
      const body = heldCall();
      const first = await hold(owner.workspaceId, body, 201);
      const again = await hold(owner.workspaceId, { ...body, reason: 'a retry' }, 200);
      expect(again.body).toEqual(first.body);
      const racing = heldCall();
      const results = await Promise.all([hold(owner.workspaceId, racing), hold(owner.workspaceId, racing), hold(owner.workspaceId, racing)]);
      expect(results.map((r) => r.status).sort()).toEqual([200, 200, 201]);
      expect(new Set(results.map((r) => r.body.approval_id)).size).toBe(1);
      expect(await count(`SELECT count(*) AS n FROM approvals WHERE request_id = $1`, [racing.request_id])).toBe(1);
    });

    it('answers 200 denied default_deny when no allow rule matches (tool or environment) or a deny rule matches', async () => {
      for (const over of [{ tool: 'slack.post' }, { env: 'dev' }]) {
        const res = await hold(owner.workspaceId, heldCall(over), 200);
        expect(res.body).toMatchObject({ decision_status: 'denied', decision_reason: 'default_deny', quorum_required: 0, decided_at: expect.stringMatching(RFC3339) });
        expect(res.body.policy_snapshot.rules).toEqual([]);
      }
      const op = await t.signIn();
      await createPolicy(op, [rule(), rule({ rule_id: 'no-refunds-in-prod', effect: 'deny', tools: ['stripe.refund'] })]);
      const denied = await hold(op.workspaceId, heldCall(), 200);
      expect(denied.body).toMatchObject({ decision_status: 'denied', decision_reason: 'default_deny' });
      expect(denied.body.policy_snapshot.rules.map((r: { rule_id: string }) => r.rule_id)).toEqual(['no-refunds-in-prod', 'refunds']);
      const again = await hold(op.workspaceId, { ...heldCall(), request_id: denied.body.request_id }, 200);
      expect(again.body.approval_id).toBe(denied.body.approval_id);
    });

    it('matches a held call against the rule set of a policy change that committed while it waited for the workspace lock', async () => {
      const op = await t.signIn();
      const policy = await createPolicy(op, [rule()]);
      const holder = await lockWorkspace(op.workspaceId);
      let revising: Promise<Response>;
      let holding: Promise<Response>;
      try {
        // Queued in this order behind the lock: the revision (stripe.* no longer held), then the held call.
        revising = start(revise(op, policy.policy_id, [rule({ tools: ['github.*'] })], 1));
        await lockWaiters(t.db, 1);
        holding = hold(op.workspaceId, heldCall());
        await lockWaiters(t.db, 2);
      } finally {
        await holder.end();
      }
      expect((await revising).status).toBe(200);
      const res = await holding;
      const current = (await t.app.get(PublicationService).build(op.workspaceId))!.approval_rules as { policy_set_hash: string };
      expect([res.status, res.body.decision_status, res.body.decision_reason]).toEqual([200, 'denied', 'default_deny']);
      expect(res.body.policy_snapshot).toEqual({ policy_set_hash: current.policy_set_hash, rules: [] });
    });

    it('answers 404 workspace not found for an unknown workspace', async () => {
      await hold('ws_000000000000000000000000', heldCall()).then((r) => expect(r.status).toBe(404));
    });

    it('answers 401 service token not accepted without a service token or with an operator session', async () => {
      const path = `/internal/v1/workspaces/${owner.workspaceId}/approvals`;
      await t.http().post(path).send(heldCall()).expect(401, { detail: 'service token not accepted' });
      await t.http().post(path).set(bearer(owner)).send(heldCall()).expect(401, { detail: 'service token not accepted' });
      const wrongDirection = await signServiceToken(SERVICE_SECRET, 'control', 'gateway');
      await t.http().post(path).set('Authorization', `Bearer ${wrongDirection}`).send(heldCall()).expect(401, { detail: 'service token not accepted' });
    });

    it.each([
      ['a missing request_id', { request_id: undefined }, 'request_id'],
      ['a request_id without req_', { request_id: 'abc' }, 'request_id'],
      ['a key_id without key_', { key_id: 'vk_1' }, 'key_id'],
      ['an unknown env', { env: 'qa' }, 'env'],
      ['raw arguments in safe_summary', { safe_summary: { amount_usd: 1, card_number: '4242' } }, 'safe_summary'],
      ['a non-numeric amount', { safe_summary: { amount_usd: '12' } }, 'safe_summary'],
      ['an empty tool', { tool: '' }, 'tool'],
      ['an extra field', { arguments: { to: 'x' } }, 'arguments'],
    ])('answers 422 for %s and writes nothing', async (_, over, field) => {
      const body = heldCall(over);
      const res = await hold(owner.workspaceId, body, 422);
      expect(res.body.detail.map((d: { loc: string[] }) => d.loc)).toEqual([['body', field]]);
      expect(await count(`SELECT count(*) AS n FROM approvals WHERE request_id = $1`, [String(body.request_id)])).toBe(0);
    });
  });

  describe('inbox', () => {
    let owner: Operator;
    let admin: Operator;
    let viewer: Operator;
    beforeAll(async () => {
      owner = await t.signIn();
      admin = await t.member(owner, 'admin');
      viewer = await t.member(owner, 'viewer');
      await createPolicy(owner, [rule()]);
    });

    it('gets an approval with the caller\'s can_vote, vote_block_reason and current_user_vote', async () => {
      const a = await pending(owner);
      expect((await get(owner, a.approval_id).expect(200)).body).toMatchObject({ ...a, can_vote: true, vote_block_reason: null, current_user_vote: null });
      expect((await get(viewer, a.approval_id).expect(200)).body).toMatchObject({ can_vote: false, vote_block_reason: 'role' });
      expect((await get(admin, a.approval_id).expect(200)).body).toMatchObject({ can_vote: false, vote_block_reason: 'not_eligible' });
      const voted = (await approve(owner, a.approval_id, 1).expect(200)).body;
      expect(voted).toMatchObject({
        can_vote: false,
        vote_block_reason: 'not_pending',
        current_user_vote: { decision: 'approve', reason: 'looks right', created_at: expect.stringMatching(RFC3339) },
      });
    });

    it('answers 404 approval not found for an unknown id or another workspace\'s approval', async () => {
      const other = await t.signIn();
      await createPolicy(other, [rule()]);
      const theirs = await pending(other);
      for (const id of ['apr_000000000000000000000000', theirs.approval_id]) {
        await get(owner, id).expect(404, { detail: 'approval not found' });
        await approve(owner, id, 1).expect(404, { detail: 'approval not found' });
      }
    });

    it('lists newest first by (created_at, approval_id) with a keyset cursor', async () => {
      const op = await t.signIn();
      await createPolicy(op, [rule()]);
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push((await pending(op)).approval_id);
      const rows = await t.db.query(`SELECT id FROM approvals WHERE workspace_id = $1 ORDER BY created_at DESC, id DESC`, [op.workspaceId]);
      const expected = rows.map((r: { id: string }) => r.id);
      expect(new Set(expected)).toEqual(new Set(ids));
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const res: { body: { approvals: { approval_id: string; can_vote: boolean }[]; next_cursor: string | null } } = await list(op, cursor ? { limit: 2, cursor } : { limit: 2 }).expect(200);
        expect(res.body.approvals.length).toBeLessThanOrEqual(2);
        expect(res.body.approvals.every((a) => a.can_vote)).toBe(true);
        seen.push(...res.body.approvals.map((a) => a.approval_id));
        cursor = res.body.next_cursor;
      } while (cursor);
      expect(seen).toEqual(expected);
      const all = await list(op).expect(200);
      expect(all.body.approvals.map((a: { approval_id: string }) => a.approval_id)).toEqual(expected);
      expect(all.body.next_cursor).toBeNull();
    });

    it('answers 422 invalid cursor for a cursor it did not issue or longer than 1024 characters, and 422 for a bad limit or status', async () => {
      for (const cursor of ['garbage', 'eyJ2IjoxfQ', 'A'.repeat(1025)]) {
        const res = await list(owner, { cursor }).expect(422);
        expect(res.body).toEqual({ detail: [{ loc: ['query', 'cursor'], msg: 'invalid cursor', type: 'value_error' }] });
      }
      for (const limit of [0, 51, 'x']) {
        const res = await list(owner, { limit }).expect(422);
        expect(res.body.detail[0].loc).toEqual(['query', 'limit']);
      }
      await list(owner, { limit: 50 }).expect(200);
      const res = await list(owner, { decision_status: 'open' }).expect(422);
      expect(res.body.detail[0].loc).toEqual(['query', 'decision_status']);
    });

    it('filters on the effective status: pending excludes expired and invalidated, expired includes stored-pending past expiry', async () => {
      const op = await t.signIn();
      const policy = await createPolicy(op, [rule()]);
      const stale = await pending(op);
      const expiredBeforeChange = await pending(op);
      await expire(expiredBeforeChange.approval_id);
      await t.http().put(`/api/v1/workspaces/${op.workspaceId}/approval-policies/${policy.policy_id}`).set(bearer(op)).send({ name: 'renamed', rules: [rule()], expected_revision: 1 }).expect(200);
      const open = await pending(op);
      const expired = await pending(op);
      await expire(expired.approval_id);
      const approved = await pending(op);
      await approve(op, approved.approval_id, 1).expect(200);
      const denied = (await hold(op.workspaceId, heldCall({ tool: 'other.tool' }), 200)).body;
      const ids = async (status: string) =>
        (await list(op, { decision_status: status }).expect(200)).body.approvals.map((a: { approval_id: string; decision_status: string }) => {
          expect(a.decision_status).toBe(status);
          return a.approval_id;
        });
      expect(await ids('pending')).toEqual([open.approval_id]);
      expect(new Set(await ids('expired'))).toEqual(new Set([expired.approval_id, expiredBeforeChange.approval_id]));
      expect(await ids('invalidated')).toEqual([stale.approval_id]);
      expect(await ids('approved')).toEqual([approved.approval_id]);
      expect(await ids('denied')).toEqual([denied.approval_id]);
      expect((await get(op, stale.approval_id).expect(200)).body).toMatchObject({ decision_status: 'invalidated', decision_reason: 'policy_changed', can_vote: false, vote_block_reason: 'policy_changed' });
      expect((await get(op, expired.approval_id).expect(200)).body).toMatchObject({ decision_status: 'expired', decision_reason: 'expired', vote_block_reason: 'expired' });
      expect((await stored(stale.approval_id)).status).toBe('pending');
    });

    it('answers 401, 404 for a non-member as for a missing workspace, and lets a viewer read (also when frozen)', async () => {
      await t.http().get(inbox(owner.workspaceId)).expect(401, { detail: 'session required' });
      const a = await list(outsider, {}, owner.workspaceId).expect(404);
      const b = await list(owner, {}, 'ws_000000000000000000000000').expect(404);
      expect(a.body).toEqual({ detail: 'workspace not found' });
      expect(b.body).toEqual(a.body);
      const approval = await pending(owner);
      await get(outsider, approval.approval_id, owner.workspaceId).expect(404, { detail: 'workspace not found' });
      await list(viewer).expect(200);
      const op = await t.signIn();
      await createPolicy(op, [rule()]);
      const held = await pending(op);
      await freezeWorkspace(t, op.workspaceId);
      await list(op).expect(200);
      expect((await get(op, held.approval_id).expect(200)).body).toMatchObject({ can_vote: false, vote_block_reason: 'frozen' });
    });
  });

  describe('votes', () => {
    let owner: Operator;
    let admin: Operator;
    let developer: Operator;
    let viewer: Operator;
    beforeAll(async () => {
      owner = await t.signIn();
      admin = await t.member(owner, 'admin');
      developer = await t.member(owner, 'developer');
      viewer = await t.member(owner, 'viewer');
      await createPolicy(owner, [rule({ approver_user_ids: [viewer.userId, developer.userId] })]);
    });

    it('approves at quorum 1: approved / quorum_met, execution pending, vote recorded and audited', async () => {
      const a = await pending(owner);
      const res = await vote(owner, a.approval_id, { decision: 'approve', reason: 'customer confirmed', expected_revision: 1 }).expect(200);
      expect(res.body).toMatchObject({
        decision_status: 'approved',
        decision_reason: 'quorum_met',
        execution_status: 'pending',
        revision: 2,
        decided_at: expect.stringMatching(RFC3339),
        quorum_required: 1,
        approvals_received: 1,
        votes: [{ user_id: owner.userId, decision: 'approve', reason: 'customer confirmed', created_at: expect.stringMatching(RFC3339) }],
      });
      const [audit] = await t.db.query(`SELECT actor_user_id, target, detail FROM audit_events WHERE action = 'approval.approve' AND target = $1`, [a.approval_id]);
      expect(audit).toEqual({
        actor_user_id: owner.userId,
        target: a.approval_id,
        detail: { key_id: a.key_id, connection_id: a.connection_id, env: 'prod', status: 'approved', reason: 'customer confirmed' },
      });
    });

    it('denies on an eligible deny: denied / reviewer_deny, audited as approval.deny', async () => {
      const a = await pending(owner);
      const res = await vote(owner, a.approval_id, { decision: 'deny', reason: 'not this one', expected_revision: 1 }).expect(200);
      expect(res.body).toMatchObject({ decision_status: 'denied', decision_reason: 'reviewer_deny', execution_status: 'not_requested', approvals_received: 0, revision: 2 });
      expect(await count(`SELECT count(*) AS n FROM audit_events WHERE action = 'approval.deny' AND target = $1`, [a.approval_id])).toBe(1);
    });

    it('answers 403 action not permitted to a viewer or developer even when named in approver_user_ids', async () => {
      const a = await pending(owner);
      for (const op of [viewer, developer]) await approve(op, a.approval_id, 1).expect(403, { detail: 'action not permitted' });
      expect(await voteRows(a.approval_id)).toBe(0);
    });

    it('answers 403 operator is not an eligible approver to an admin the matched rules do not name', async () => {
      const a = await pending(owner);
      await approve(admin, a.approval_id, 1).expect(403, { detail: 'operator is not an eligible approver' });
      expect(await voteRows(a.approval_id)).toBe(0);
    });

    it('answers every 409 of the vote route and writes nothing', async () => {
      const op = await t.signIn();
      const second = await t.member(op, 'owner');
      const policy = await createPolicy(op, [rule({ quorum: 2 })]);
      const a = await pending(op);
      await approve(op, a.approval_id, 1).expect(200);
      await approve(op, a.approval_id, 2).expect(409, { detail: 'operator already voted' });
      await approve(second, a.approval_id, 1).expect(409, { detail: 'approval revision changed' });
      expect(await stored(a.approval_id)).toMatchObject({ status: 'pending', revision: 2 });
      await approve(second, a.approval_id, 2).expect(200);
      const third = await t.member(op, 'owner');
      await approve(third, a.approval_id, 3).expect(409, { detail: 'approval is not pending' });

      const old = await pending(op);
      await expire(old.approval_id);
      await approve(op, old.approval_id, 1).expect(409, { detail: 'approval has expired' });

      const before = await pending(op);
      await t.http().post(`/api/v1/workspaces/${op.workspaceId}/approval-policies/${policy.policy_id}/disable`).set(bearer(op)).send({ expected_revision: 1 }).expect(200);
      await approve(op, before.approval_id, 1).expect(409, { detail: 'approval policy changed' });

      await createPolicy(op, [rule()]);
      const held = await pending(op);
      await freezeWorkspace(t, op.workspaceId);
      await approve(op, held.approval_id, 1).expect(409, { detail: 'workspace is frozen' });
      for (const id of [old.approval_id, before.approval_id, held.approval_id]) expect(await voteRows(id)).toBe(0);
      expect(await count(`SELECT count(*) AS n FROM approval_votes WHERE approval_id = $1`, [a.approval_id])).toBe(2);
    });

    it('answers 401 without a session and 404 to a non-member as for a missing workspace', async () => {
      const a = await pending(owner);
      await t.http().post(`${inbox(owner.workspaceId)}/${a.approval_id}/votes`).send({ decision: 'approve', reason: 'x', expected_revision: 1 }).expect(401, { detail: 'session required' });
      const x = await approve({ ...outsider, workspaceId: owner.workspaceId }, a.approval_id, 1).expect(404);
      const y = await vote(owner, a.approval_id, { decision: 'approve', reason: 'x', expected_revision: 1 }, 'ws_000000000000000000000000').expect(404);
      expect(x.body).toEqual({ detail: 'workspace not found' });
      expect(y.body).toEqual(x.body);
    });

    it('answers 422 review reason must not be blank, and for a bad decision, reason length, revision or extra field', async () => {
      const a = await pending(owner);
      const blank = await vote(owner, a.approval_id, { decision: 'approve', reason: ' \t\n ', expected_revision: 1 }).expect(422);
      expect(blank.body).toEqual({ detail: [{ loc: ['body', 'reason'], msg: 'review reason must not be blank', type: 'value_error' }] });
      const cases: [Record<string, unknown>, string][] = [
        [{ decision: 'maybe', reason: 'x', expected_revision: 1 }, 'decision'],
        [{ decision: 'approve', reason: '', expected_revision: 1 }, 'reason'],
        [{ decision: 'approve', reason: 'x'.repeat(513), expected_revision: 1 }, 'reason'],
        [{ decision: 'approve', expected_revision: 1 }, 'reason'],
        [{ decision: 'approve', reason: 'x' }, 'expected_revision'],
        [{ decision: 'approve', reason: 'x', expected_revision: 0 }, 'expected_revision'],
        [{ decision: 'approve', reason: 'x', expected_revision: 1, quorum: 1 }, 'quorum'],
      ];
      for (const [body, field] of cases) {
        const res = await vote(owner, a.approval_id, body).expect(422);
        expect(res.body.detail.map((d: { loc: string[] }) => d.loc)).toEqual([['body', field]]);
      }
      expect(await voteRows(a.approval_id)).toBe(0);
      await vote(owner, a.approval_id, { decision: 'approve', reason: 'x'.repeat(512), expected_revision: 1 }).expect(200);
    });

    it('reaches quorum 2 from a role rule and a user rule; eligibility is their union', async () => {
      const op = await t.signIn();
      const named = await t.member(op, 'admin');
      const unnamed = await t.member(op, 'admin');
      await createPolicy(op, [rule({ rule_id: 'owners' }), rule({ rule_id: 'named-admin', approver_roles: [], approver_user_ids: [named.userId], quorum: 2 })]);
      const a = await pending(op);
      expect(a.quorum_required).toBe(2);
      expect(a.policy_snapshot.rules.map((r: { rule_id: string }) => r.rule_id)).toEqual(['named-admin', 'owners']);
      await approve(unnamed, a.approval_id, 1).expect(403, { detail: 'operator is not an eligible approver' });
      const first = (await approve(op, a.approval_id, 1).expect(200)).body;
      expect(first).toMatchObject({ decision_status: 'pending', decision_reason: 'awaiting_quorum', approvals_received: 1, decided_at: null, revision: 2 });
      const second = (await approve(named, a.approval_id, 2).expect(200)).body;
      expect(second).toMatchObject({ decision_status: 'approved', decision_reason: 'quorum_met', approvals_received: 2, quorum_required: 2 });
      expect(second.votes.map((v: { user_id: string }) => v.user_id).sort()).toEqual([op.userId, named.userId].sort());
    });

    it('invalidates open approvals after a revise: approved-unexecuted ones too; stored rows are not rewritten', async () => {
      const op = await t.signIn();
      const policy = await createPolicy(op, [rule()]);
      const open = await pending(op);
      const approved = await pending(op);
      await approve(op, approved.approval_id, 1).expect(200);
      const executed = await pending(op);
      await approve(op, executed.approval_id, 1).expect(200);
      await report(op.workspaceId, executed.approval_id, { status: 'succeeded', receipt_id: 'rcp_1' }).then((r) => expect(r.status).toBe(200));
      await t.http().put(`/api/v1/workspaces/${op.workspaceId}/approval-policies/${policy.policy_id}`).set(bearer(op)).send({ name: 'same', rules: [rule()], expected_revision: 1 }).expect(200);
      for (const id of [open.approval_id, approved.approval_id]) {
        expect((await get(op, id).expect(200)).body).toMatchObject({ decision_status: 'invalidated', decision_reason: 'policy_changed' });
      }
      expect((await get(op, executed.approval_id).expect(200)).body).toMatchObject({ decision_status: 'approved', execution_status: 'succeeded' });
      expect(await stored(open.approval_id)).toMatchObject({ status: 'pending', decision_reason: 'awaiting_quorum' });
      expect((await report(op.workspaceId, approved.approval_id, { status: 'succeeded' })).body).toEqual({ detail: 'approval policy changed' });
    });

    it('lets exactly one of 20 reviewers racing for the last slot succeed, with a consistent count and one transition', async () => {
      const op = await t.signIn();
      const reviewers: Operator[] = [];
      for (let i = 0; i < 20; i++) reviewers.push(await t.member(op, 'admin'));
      await createPolicy(op, [rule({ approver_roles: ['admin', 'owner'], quorum: 2 })]);
      const a = await pending(op);
      await approve(op, a.approval_id, 1).expect(200);
      const results = await Promise.all(reviewers.map((r) => approve(r, a.approval_id, 2)));
      const winners = results.filter((r) => r.status === 200);
      expect(winners).toHaveLength(1);
      expect(results.filter((r) => r.status === 409).map((r) => r.body.detail)).toEqual(Array(19).fill('approval is not pending'));
      const final = (await get(op, a.approval_id).expect(200)).body;
      expect(final).toMatchObject({ decision_status: 'approved', decision_reason: 'quorum_met', approvals_received: 2, revision: 3 });
      expect(await voteRows(a.approval_id)).toBe(2);
      expect(await count(`SELECT count(*) AS n FROM audit_events WHERE action = 'approval.approve' AND target = $1`, [a.approval_id])).toBe(2);
      expect(await count(`SELECT count(*) AS n FROM audit_events WHERE action = 'approval.approve' AND target = $1 AND detail->>'status' = 'approved'`, [a.approval_id])).toBe(1);
    });

    it('lets exactly one of 20 concurrent votes at the same revision land; the others see the revision changed', async () => {
      const op = await t.signIn();
      const reviewers: Operator[] = [op];
      for (let i = 0; i < 19; i++) reviewers.push(await t.member(op, 'owner'));
      await createPolicy(op, [rule({ quorum: 2 })]);
      const a = await pending(op);
      const results = await Promise.all(reviewers.map((r) => approve(r, a.approval_id, 1)));
      expect(results.filter((r) => r.status === 200)).toHaveLength(1);
      expect(results.filter((r) => r.status !== 200).map((r) => `${r.status} ${r.body.detail}`)).toEqual(Array(19).fill('409 approval revision changed'));
      const final = (await get(op, a.approval_id).expect(200)).body;
      expect(final).toMatchObject({ decision_status: 'pending', approvals_received: 1, revision: 2 });
      expect(await voteRows(a.approval_id)).toBe(1);
    });
  });

  describe('execution reports (gateway)', () => {
    let owner: Operator;
    beforeAll(async () => {
      owner = await t.signIn();
      await createPolicy(owner, [rule()]);
    });
    const approved = async () => {
      const a = await pending(owner);
      return (await approve(owner, a.approval_id, 1).expect(200)).body;
    };

    it('records a successful execution: execution_status, result and executed_at; the same report again is idempotent', async () => {
      const a = await approved();
      const body = { status: 'succeeded', receipt_id: 'rcp_0123456789abcdef01234567', error_code: null, digest: 'sha256:abc' };
      const res = await report(owner.workspaceId, a.approval_id, body);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        decision_status: 'approved',
        decision_reason: 'quorum_met',
        execution_status: 'succeeded',
        executed_at: expect.stringMatching(RFC3339),
        result: { receipt_id: body.receipt_id, error_code: null, digest: 'sha256:abc' },
        revision: 3,
      });
      expect(res.body.can_vote).toBeUndefined();
      const again = await report(owner.workspaceId, a.approval_id, body);
      expect(again.status).toBe(200);
      expect(again.body).toEqual(res.body);
      const different = await report(owner.workspaceId, a.approval_id, { status: 'failed', error_code: 'timeout' });
      expect(different.status).toBe(409);
      expect(different.body).toEqual({ detail: 'approval execution already reported' });
      // An executed approval stays approved after expiry.
      await expire(a.approval_id);
      expect((await get(owner, a.approval_id).expect(200)).body.decision_status).toBe('approved');
    });

    it('reports a failed execution as execution_failed', async () => {
      const a = await approved();
      const res = await report(owner.workspaceId, a.approval_id, { status: 'failed', error_code: 'upstream_503' });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ decision_status: 'approved', decision_reason: 'execution_failed', execution_status: 'failed', result: { receipt_id: null, error_code: 'upstream_503', digest: null } });
    });

    it('refuses a report that raced a policy change: it waits for the workspace lock, sees the change, answers 409 and writes nothing', async () => {
      const op = await t.signIn();
      const policy = await createPolicy(op, [rule()]);
      const a = await pending(op);
      await approve(op, a.approval_id, 1).expect(200);
      const row = `SELECT status, decision_reason, execution_status, revision, executed_at, receipt_id, error_code, digest FROM approvals WHERE id = $1`;
      const [before] = await t.db.query(row, [a.approval_id]);
      const holder = await lockWorkspace(op.workspaceId);
      let revising: Promise<Response>;
      let reporting: Promise<Response>;
      try {
        // Queued in this order behind the lock: the policy revision, then the execution report.
        revising = start(revise(op, policy.policy_id, [rule()], 1));
        await lockWaiters(t.db, 1);
        reporting = report(op.workspaceId, a.approval_id, { status: 'succeeded', receipt_id: 'rcp_0123456789abcdef01234567' });
        await lockWaiters(t.db, 2);
      } finally {
        await holder.end();
      }
      expect((await revising).status).toBe(200);
      const res = await reporting;
      expect([res.status, res.body]).toEqual([409, { detail: 'approval policy changed' }]);
      expect((await t.db.query(row, [a.approval_id]))[0]).toEqual(before);
      expect(before).toMatchObject({ status: 'approved', execution_status: 'pending', executed_at: null, receipt_id: null });
      expect((await get(op, a.approval_id).expect(200)).body).toMatchObject({ decision_status: 'invalidated', execution_status: 'pending' });
    });

    it('refuses a report for an approval that is pending, denied, expired or unknown, and writes nothing', async () => {
      const open = await pending(owner);
      expect((await report(owner.workspaceId, open.approval_id, { status: 'succeeded' })).body).toEqual({ detail: 'approval is not approved' });
      const denied = (await hold(owner.workspaceId, heldCall({ tool: 'x.y' }), 200)).body;
      expect((await report(owner.workspaceId, denied.approval_id, { status: 'succeeded' })).status).toBe(409);
      const old = await approved();
      await expire(old.approval_id);
      const res = await report(owner.workspaceId, old.approval_id, { status: 'succeeded' });
      expect([res.status, res.body]).toEqual([409, { detail: 'approval has expired' }]);
      expect((await stored(old.approval_id)).execution_status).toBe('pending');
      const missing = await report(owner.workspaceId, 'apr_000000000000000000000000', { status: 'succeeded' });
      expect([missing.status, missing.body]).toEqual([404, { detail: 'approval not found' }]);
      const bad = await report(owner.workspaceId, open.approval_id, { status: 'done' });
      expect(bad.status).toBe(422);
      const noToken = await t.http().post(`/internal/v1/workspaces/${owner.workspaceId}/approvals/${open.approval_id}/execution`).send({ status: 'succeeded' });
      expect(noToken.status).toBe(401);
    });
  });

  describe('configuration', () => {
    it('takes the approval lifetime from APPROVAL_TTL_S', async () => {
      const other = await startTestApp({ APPROVAL_TTL_S: '60' });
      try {
        const op = await other.signIn();
        await other.http().post(`/api/v1/workspaces/${op.workspaceId}/approval-policies`).set(bearer(op)).send({ name: 'p', rules: [rule()] }).expect(200);
        const res = await other
          .http()
          .post(`/internal/v1/workspaces/${op.workspaceId}/approvals`)
          .set(await serviceAuth())
          .send(heldCall())
          .expect(201);
        expect(Date.parse(res.body.expires_at) - Date.parse(res.body.created_at)).toBe(60_000);
      } finally {
        await other.close();
      }
    });
  });
});
