import { AuditService } from 'src/modules/audit/audit.service';
import { inTransaction } from 'src/database/transaction';
import { bearer, Operator, startTestApp, TestApp } from 'test/support/app';
import { insertAuditRow } from 'test/support/audit';
import { deleteAuditRowsAt } from 'test/support/factories';

describe('audit listing', () => {
  let t: TestApp;
  let owner: Operator;
  const FROM = '2020-01-01T00:00:00Z';
  const TO = '2100-01-01T00:00:00Z';
  beforeAll(async () => {
    t = await startTestApp();
    owner = await t.signIn('auditor');
  });
  afterAll(() => t.close());

  const list = (query: Record<string, string | number>, op: Operator = owner, ws = owner.workspaceId) =>
    t.http().get(`/api/v1/workspaces/${ws}/audit`).query(query).set(bearer(op));

  const insert = (action: string, occurredAt: string, extra: { target?: string; actor?: string | null; detail?: object } = {}) =>
    insertAuditRow(t.db, { workspaceId: owner.workspaceId, action, occurredAt, target: extra.target, actor: extra.actor === undefined ? owner.userId : extra.actor, detail: extra.detail });

  it('lists events newest first in the documented shape', async () => {
    const res = await list({ from: FROM, to: TO }).expect(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).toEqual({
      schema_version: 1,
      workspace_id: owner.workspaceId,
      window: { from: '2020-01-01T00:00:00.000Z', to: '2100-01-01T00:00:00.000Z' },
      events: [
        {
          schema_version: 1,
          event_id: expect.stringMatching(/^aud_/),
          workspace_id: owner.workspaceId,
          actor: { user_id: owner.userId, email: owner.email },
          action: 'workspace.create',
          target: owner.workspaceId,
          detail: { env: 'dev', snapshot_version: 1 },
          occurred_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
        },
      ],
      next_cursor: null,
    });
  });

  it('pages with a cursor through ties on occurred_at without loss or repetition', async () => {
    for (let i = 0; i < 7; i++) await insert('key.mint', '2030-01-01T00:00:00.000Z', { target: `key_${i}` });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const query: Record<string, string | number> = { from: '2030-01-01T00:00:00Z', to: '2030-01-02T00:00:00Z', limit: 3 };
      if (cursor) query.cursor = cursor;
      const res = await list(query).expect(200);
      seen.push(...res.body.events.map((e: { target: string }) => e.target));
      cursor = res.body.next_cursor;
    } while (cursor);
    expect(seen.sort()).toEqual(['key_0', 'key_1', 'key_2', 'key_3', 'key_4', 'key_5', 'key_6']);
  });

  it('filters by action, user and target, and excludes actions outside the vocabulary', async () => {
    await insert('key.revoke', '2031-01-01T00:00:00Z', { target: 'key_a' });
    await insert('key.revoke', '2031-01-01T00:00:01Z', { target: 'key_b', actor: 'usr_someoneelse00000000000' });
    await insert('secret.dump', '2031-01-01T00:00:02Z', { target: 'key_a' });
    const window = { from: '2031-01-01T00:00:00Z', to: '2031-01-02T00:00:00Z' };
    const all = await list(window).expect(200);
    expect(all.body.events.map((e: { target: string }) => e.target)).toEqual(['key_b', 'key_a']);
    expect((await list({ ...window, action: 'key.revoke', target: 'key_a' }).expect(200)).body.events).toHaveLength(1);
    expect((await list({ ...window, user_id: owner.userId }).expect(200)).body.events.map((e: { target: string }) => e.target)).toEqual(['key_a']);
  });

  it('respects the half-open window', async () => {
    await insert('pricing.replace', '2032-06-01T00:00:00.000Z');
    expect((await list({ from: '2032-06-01T00:00:00Z', to: '2032-06-01T00:00:00.001Z' }).expect(200)).body.events).toHaveLength(1);
    expect((await list({ from: '2032-05-01T00:00:00Z', to: '2032-06-01T00:00:00Z' }).expect(200)).body.events).toHaveLength(0);
  });

  it('answers 422 for window, action, limit and cursor failures', async () => {
    const bad = async (query: Record<string, string | number>, loc: string[], msg?: string) => {
      const res = await list(query).expect(422);
      expect(res.body.detail).toEqual([expect.objectContaining({ loc, ...(msg ? { msg } : {}), type: expect.any(String) })]);
    };
    await bad({ to: TO }, ['query', 'from'], 'field required');
    await bad({ from: FROM }, ['query', 'to'], 'field required');
    await bad({ from: TO, to: FROM }, ['query', 'from'], 'invalid UTC window');
    await bad({ from: '2026-01-01', to: TO }, ['query', 'from'], 'invalid UTC window');
    await bad({ from: '2026-01-01T00:00:00+02:00', to: TO }, ['query', 'from'], 'invalid UTC window');
    await bad({ from: FROM, to: `${'9'.repeat(65)}` }, ['query', 'to']);
    await bad({ from: FROM, to: TO, action: 'secret.dump' }, ['query', 'action'], 'unknown audit action');
    await bad({ from: FROM, to: TO, limit: 0 }, ['query', 'limit']);
    await bad({ from: FROM, to: TO, limit: 201 }, ['query', 'limit']);
    await bad({ from: FROM, to: TO, limit: 'ten' }, ['query', 'limit']);
    await bad({ from: FROM, to: TO, cursor: 'bm90LWEtY3Vyc29y' }, ['query', 'cursor'], 'invalid cursor');
    await bad({ from: FROM, to: TO, user_id: 'u'.repeat(65) }, ['query', 'user_id']);
    await bad({ from: FROM, to: TO, target: 't'.repeat(129) }, ['query', 'target']);
  });

  it('answers 503 Observe read model unavailable, never a partial answer, when a stored row breaks the published schema', async () => {
    // A row written around the sanitizer (a corrupted read model) must not reach an operator.
    await insert('key.mint', '2033-01-01T00:00:00Z', { detail: { plaintext: 'ob_live_leaked' } });
    const res = await list({ from: '2033-01-01T00:00:00Z', to: '2033-01-02T00:00:00Z' }).expect(503);
    expect(res.body).toEqual({ detail: 'Observe read model unavailable' });
    expect(JSON.stringify(res.body)).not.toContain('ob_live_leaked');
    await deleteAuditRowsAt(t, '2033-01-01T00:00:00Z');
  });

  it('is readable by every role and in a frozen workspace; 404 for strangers', async () => {
    const viewer = await t.member(owner, 'viewer');
    await list({ from: FROM, to: TO }, viewer).expect(200);
    await list({ from: FROM, to: TO }, await t.signIn()).expect(404, { detail: 'workspace not found' });
    await t.http().get(`/api/v1/workspaces/${owner.workspaceId}/audit`).query({ from: FROM, to: TO }).expect(401);
  });

  it('sanitizes what is written: unknown detail keys dropped, long e-mail and target nulled', async () => {
    const audit = t.app.get(AuditService);
    const longEmail = `${'e'.repeat(316)}@x.io`;
    await inTransaction(t.db, (tx) =>
      audit.record(tx, {
        workspaceId: owner.workspaceId,
        actor: { userId: owner.userId, email: longEmail },
        action: 'policy.publish',
        target: 't'.repeat(257),
        detail: { policy_id: 'pol_1', plaintext: 'ob_live_secret', api_key: 'sk_test_x', reason: 'ok' },
      }),
    );
    const res = await list({ from: FROM, to: TO, action: 'policy.publish' }).expect(200);
    expect(res.body.events[0]).toMatchObject({ actor: { user_id: owner.userId, email: null }, target: null, detail: { policy_id: 'pol_1', reason: 'ok' } });
    expect(JSON.stringify(res.body)).not.toMatch(/ob_live_secret|sk_test_x/);
    const okEmail = `${'e'.repeat(315)}@x.io`;
    expect(okEmail).toHaveLength(320);
    await inTransaction(t.db, (tx) => audit.record(tx, { workspaceId: owner.workspaceId, actor: { userId: owner.userId, email: okEmail }, action: 'pricing.replace', target: 't'.repeat(256) }));
    const recent = { from: new Date(Date.now() - 3600_000).toISOString(), to: new Date(Date.now() + 3600_000).toISOString() };
    const kept = await list({ ...recent, action: 'pricing.replace', limit: 1 }).expect(200);
    expect(kept.body.events[0]).toMatchObject({ actor: { email: okEmail }, target: 't'.repeat(256) });
  });

  it("keeps exactly the specification's detail allow-list in the listing; the extra stored keys stay in the row", async () => {
    await insert('key.mint', '2034-01-01T00:00:00Z', { target: 'key_spec', detail: { agent_id: 'a', prefix: 'ob_test', last4: 'abcd', tools_mode: 'progressive', scopes: ['llm'] } });
    await insert('model_connection.start', '2034-01-01T00:00:01Z', { target: 'conn_spec', detail: { connection_id: 'conn_spec', model_pattern: 'gpt-*' } });
    const res = await list({ from: '2034-01-01T00:00:00Z', to: '2034-01-02T00:00:00Z' }).expect(200);
    expect(res.body.events.map((e: { detail: object }) => e.detail)).toEqual([{ connection_id: 'conn_spec' }, { agent_id: 'a', prefix: 'ob_test', last4: 'abcd' }]);
    expect(await t.db.query(`SELECT detail FROM audit_events WHERE target = 'key_spec'`)).toEqual([{ detail: { agent_id: 'a', prefix: 'ob_test', last4: 'abcd', tools_mode: 'progressive', scopes: ['llm'] } }]);
  });
});
