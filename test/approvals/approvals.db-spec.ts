import { ApprovalsRepository, NewApproval } from 'src/modules/approvals/approvals.repository';
import { openRepositoryDatabase, RepositoryDatabase } from 'test/support/repository-database';

describe('ApprovalsRepository', () => {
  let db: RepositoryDatabase;
  let approvals: ApprovalsRepository;
  const ws = 'ws_apr';
  const t0 = new Date('2030-01-01T00:00:00.000Z');
  const at = (s: number) => new Date(t0.getTime() + s * 1000);
  let n = 0;
  const held = (over: Partial<NewApproval> = {}): NewApproval => {
    n++;
    return {
      id: `apr_${String(n).padStart(3, '0')}`, workspaceId: ws, requestId: `req_${n}`, keyId: 'key_1', invocationId: null, tool: 'stripe.refund',
      invocationTool: 'refund', connectionId: 'conn_1', env: 'prod', safeSummary: { amount: 3 }, reason: 'why', status: 'pending',
      decisionReason: 'awaiting_quorum', policySetHash: 'sha256:a', matchedRules: [], quorumRequired: 1, createdAt: at(n), expiresAt: at(n + 3600),
      decidedAt: null, ...over,
    };
  };
  const hold = async (over: Partial<NewApproval> = {}) => {
    const a = held(over);
    expect(await approvals.insertHeld(db.dataSource.manager, a)).toBe(true);
    return a;
  };

  beforeAll(async () => {
    db = await openRepositoryDatabase();
    approvals = new ApprovalsRepository(db.dataSource);
    await db.dataSource.query(`INSERT INTO organizations (id) VALUES ('org_apr')`);
    await db.dataSource.query(`INSERT INTO workspaces (id, org_id, slug, env) VALUES ($1, 'org_apr', 'a', 'prod')`, [ws]);
    await db.dataSource.query(`INSERT INTO users (id, issuer, subject) VALUES ('usr_a', 'i', 'a'), ('usr_b', 'i', 'b')`);
  });
  afterAll(() => db.close());

  it('stores a held call once per request_id (a retry stores nothing) and reads it back in the row shape', async () => {
    const a = await hold();
    expect(await approvals.insertHeld(db.dataSource.manager, { ...held(), requestId: a.requestId })).toBe(false);
    const row = await approvals.findByRequest(ws, a.requestId);
    expect(row).toEqual({
      id: a.id, workspace_id: ws, request_id: a.requestId, key_id: 'key_1', invocation_id: null, tool: 'stripe.refund', invocation_tool: 'refund',
      connection_id: 'conn_1', env: 'prod', safe_summary: { amount: 3 }, reason: 'why', status: 'pending', decision_reason: 'awaiting_quorum',
      execution_status: 'not_requested', revision: 1, policy_set_hash: 'sha256:a', matched_rules: [], quorum_required: 1, created_at: a.createdAt,
      expires_at: a.expiresAt, decided_at: null, executed_at: null, receipt_id: null, error_code: null, digest: null,
    });
    expect(await approvals.find(ws, a.id)).toEqual(row);
    expect(await approvals.find('ws_other', a.id)).toBeNull();
    expect(await approvals.findByRequest(ws, 'req_none')).toBeNull();
  });

  it('records votes in order, a decision and an execution, each a new revision', async () => {
    const a = await hold({ quorumRequired: 2 });
    const m = db.dataSource.manager;
    await approvals.insertVote(m, { approvalId: a.id, workspaceId: ws, userId: 'usr_b', decision: 'approve', reason: 'ok' });
    await approvals.insertVote(m, { approvalId: a.id, workspaceId: ws, userId: 'usr_a', decision: 'approve', reason: 'fine' });
    await expect(approvals.insertVote(m, { approvalId: a.id, workspaceId: ws, userId: 'usr_a', decision: 'deny', reason: 'again' })).rejects.toThrow(/duplicate key/);
    const votes = (await approvals.votes(ws, [a.id, 'apr_none'])).get(a.id)!;
    expect(votes.map((v) => [v.user_id, v.decision, v.reason])).toEqual([['usr_b', 'approve', 'ok'], ['usr_a', 'approve', 'fine']]);
    expect(votes[0].created_at.getTime()).toBeLessThanOrEqual(votes[1].created_at.getTime());
    expect(await approvals.votes(ws, [])).toEqual(new Map());

    await approvals.decide(m, ws, a.id, { status: 'approved', reason: 'quorum_met', execution: 'pending', decidedAt: at(100) });
    expect(await approvals.find(ws, a.id)).toMatchObject({ status: 'approved', decision_reason: 'quorum_met', execution_status: 'pending', decided_at: at(100), revision: 2 });
    await approvals.recordExecution(m, ws, a.id, { executionStatus: 'succeeded', decisionReason: 'quorum_met', executedAt: at(200), receiptId: 'rcp_1', errorCode: null, digest: 'sha256:d' });
    expect(await approvals.find(ws, a.id)).toMatchObject({ execution_status: 'succeeded', executed_at: at(200), receipt_id: 'rcp_1', digest: 'sha256:d', revision: 3 });
  });

  it('locks an approval for update in a transaction', async () => {
    const a = await hold();
    await db.dataSource.transaction(async (m) => {
      expect((await approvals.find(ws, a.id, m, true))!.id).toBe(a.id);
      const blocked = db.dataSource.transaction(async (m2) => {
        await m2.query(`SET LOCAL lock_timeout = '200ms'`);
        return approvals.find(ws, a.id, m2, true);
      });
      await expect(blocked).rejects.toThrow(/lock timeout/);
    });
  });

  it('pages newest first by (created_at, id), with the effective-status filters', async () => {
    const id = 'ws_apr_page';
    await db.dataSource.query(`INSERT INTO workspaces (id, org_id, slug, env) VALUES ($1, 'org_apr', 'p', 'prod')`, [id]);
    const now = at(10_000);
    const pending = await hold({ workspaceId: id, expiresAt: at(20_000) });
    const expired = await hold({ workspaceId: id, expiresAt: at(5_000) });
    const invalidated = await hold({ workspaceId: id, expiresAt: at(20_000), policySetHash: 'sha256:old' });
    const denied = await hold({ workspaceId: id, status: 'denied', decisionReason: 'default_deny', decidedAt: at(1) });
    const page = (status?: 'pending' | 'expired' | 'invalidated' | 'denied' | 'approved', after: { at: Date; id: string } | null = null, limit = 10) =>
      approvals.page(id, { status, now, hash: 'sha256:a' }, after, limit).then((rows) => rows.map((r) => r.id));
    expect(await page()).toEqual([denied.id, invalidated.id, expired.id, pending.id]);
    expect(await page('pending')).toEqual([pending.id]);
    expect(await page('expired')).toEqual([expired.id]);
    expect(await page('invalidated')).toEqual([invalidated.id]);
    expect(await page('denied')).toEqual([denied.id]);
    expect(await page('approved')).toEqual([]);
    expect(await page(undefined, null, 2)).toEqual([denied.id, invalidated.id]);
    expect(await page(undefined, { at: invalidated.createdAt, id: invalidated.id })).toEqual([expired.id, pending.id]);
  });

  it('finds the pending approvals timing out, and those raised under another policy set', async () => {
    const id = 'ws_apr_time';
    await db.dataSource.query(`INSERT INTO workspaces (id, org_id, slug, env) VALUES ($1, 'org_apr', 't', 'prod')`, [id]);
    const base = new Date('2040-01-01T00:00:00.000Z');
    const s = (x: number) => new Date(base.getTime() + x * 1000);
    const late = await hold({ workspaceId: id, expiresAt: s(30) });
    const soon = await hold({ workspaceId: id, expiresAt: s(10), policySetHash: 'sha256:old' });
    await hold({ workspaceId: id, expiresAt: s(0) });
    await hold({ workspaceId: id, expiresAt: s(20), status: 'denied', decisionReason: 'default_deny' });
    await hold({ workspaceId: id, expiresAt: s(100) });
    expect((await approvals.timingOut(s(30), s(0))).map((r) => [r.id, r.workspaceId, r.expiresAt])).toEqual([
      [soon.id, id, s(10)],
      [late.id, id, s(30)],
    ]);
    expect(await approvals.pendingUnderOtherSet(db.dataSource.manager, id, s(5), 'sha256:a')).toEqual([{ id: soon.id, expiresAt: s(10) }]);
    expect(await approvals.pendingUnderOtherSet(db.dataSource.manager, id, s(15), 'sha256:a')).toEqual([]);
  });
});
