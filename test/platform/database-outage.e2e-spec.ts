import { Client } from 'pg';
import request from 'supertest';
import { randomBytes } from 'node:crypto';
import { signServiceToken } from 'src/platform/auth/service-token';
import { sha256Hex } from 'src/common/crypto/crypto';
import { AuditTrailService } from 'src/modules/audit/audit-trail.service';
import { CHECK_TIMEOUT_MS } from 'src/modules/health/readiness.service';
import { bearer, Operator, SERVICE_SECRET, startTestApp, TestApp } from 'test/support/app';
import { GatewayStreams, usageEvent } from 'test/support/streams';
import { TcpProxy } from 'test/support/tcp-proxy';

/**
 * PostgreSQL taken away under the running service the ways it goes away in production, with a TCP
 * proxy between the service and the real server (issue 28): refused (a restart), partitioned (no
 * answer, no reset), every backend terminated (a failover), and cut under concurrent writes. The
 * service runs with its default bounds (DATABASE_CONNECT_TIMEOUT_MS, DATABASE_STATEMENT_TIMEOUT_MS).
 */
describe('PostgreSQL outages', () => {
  let proxy: TcpProxy;
  let t: TestApp;
  let owner: Operator;
  let direct: Client;
  let gw: GatewayStreams;

  const DATABASE_UNAVAILABLE = { error: { code: 'database_unavailable', message: 'database unavailable' } };
  const READ_MODEL_UNAVAILABLE = { detail: 'Observe read model unavailable' };

  beforeAll(async () => {
    t = await startTestApp({}, { via: async (url) => (proxy = await TcpProxy.start(url)).url });
    owner = await t.signIn();
    // Assertions read the suite's database directly, never through the proxy.
    direct = new Client({ connectionString: t.databaseUrl });
    await direct.connect();
    gw = new GatewayStreams(t);
  });
  afterAll(async () => {
    proxy.release();
    await proxy.start();
    gw.close();
    await direct.end();
    await t.close();
    await proxy.stop();
  });

  const ws = () => `/api/v1/workspaces/${owner.workspaceId}`;
  const service = async () => `Bearer ${await signServiceToken(SERVICE_SECRET, 'gateway', 'control')}`;
  /** A route of each kind: what it answers when PostgreSQL is there, and the body of its 503. */
  const routes = (): [string, () => Promise<request.Response>, number, object][] => [
    ['GET /me', () => t.http().get('/api/v1/me').set(bearer(owner)), 200, DATABASE_UNAVAILABLE],
    ['list keys', () => t.http().get(`${ws()}/keys`).set(bearer(owner)), 200, DATABASE_UNAVAILABLE],
    ['mint key', () => t.http().post(`${ws()}/keys`).set(bearer(owner)).send({ agent_id: 'outage' }), 201, DATABASE_UNAVAILABLE],
    ['list approval policies', () => t.http().get(`${ws()}/approval-policies`).set(bearer(owner)), 200, DATABASE_UNAVAILABLE],
    ['list approvals', () => t.http().get(`${ws()}/approvals`).set(bearer(owner)), 200, DATABASE_UNAVAILABLE],
    ['usage summary', () => t.http().get(`${ws()}/usage`).query({ from: '2026-01-15T00:00:00Z', to: '2026-01-16T00:00:00Z' }).set(bearer(owner)), 200, READ_MODEL_UNAVAILABLE],
    ['audit list', () => t.http().get(`${ws()}/audit`).query({ from: '2026-01-15T00:00:00Z', to: '2026-01-16T00:00:00Z' }).set(bearer(owner)), 200, READ_MODEL_UNAVAILABLE],
    // A key the hot path does not hold: the lookup reads PostgreSQL.
    ['internal key lookup', async () => t.http().get(`/internal/v1/keys/${sha256Hex(randomBytes(16))}`).set('Authorization', await service()), 404, DATABASE_UNAVAILABLE],
  ];

  const timed = async (call: () => Promise<request.Response>) => {
    const started = Date.now();
    const res = await call();
    return { status: res.status, body: res.body as unknown, ms: Date.now() - started };
  };
  const health = () => timed(() => t.http().get('/healthz'));
  const ready = () => timed(() => t.http().get('/readyz'));

  /** Every route answers as it does with PostgreSQL there (no restart, no wait beyond the first request). */
  const expectRecovered = async () => {
    for (const [name, call, status] of routes()) expect([name, (await timed(call)).status]).toEqual([name, status]);
    expect((await ready()).status).toBe(200);
  };

  const databaseName = () => new URL(t.databaseUrl).pathname.slice(1);
  /** pg_terminate_backend of every backend of this suite's own database (other suites share the server). */
  const terminateBackends = async (): Promise<number> => {
    const [{ n }] = (
      await direct.query(`SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, [databaseName()])
    ).rows;
    return n as number;
  };

  it('answers every route 503 in its shape at once while PostgreSQL refuses connections, liveness 200, readiness 503 naming database; recovers without a restart', async () => {
    await expectRecovered();
    await proxy.stop();
    try {
      for (const [name, call, , body] of routes()) {
        const res = await timed(call);
        expect([name, res.status, res.body]).toEqual([name, 503, body]);
        expect(res.ms).toBeLessThan(2000);
      }
      const live = await health();
      expect([live.status, live.body]).toEqual([200, { ok: true }]);
      expect(live.ms).toBeLessThan(1000);
      const readiness = await ready();
      expect(readiness.status).toBe(503);
      expect(readiness.body).toMatchObject({ status: 'error', error: { database: { status: 'down', message: 'unreachable' } } });
      expect(readiness.ms).toBeLessThan(CHECK_TIMEOUT_MS + 1000);
      // Nothing the refused mints asked for was written.
    } finally {
      await proxy.start();
    }
    await expectRecovered();
  });

  it('answers every route 503 within 10 s while PostgreSQL is partitioned (no answer, no reset), liveness 200 within 1 s, readiness 503 within its bound; recovers without a restart', async () => {
    await expectRecovered();
    const keysBefore = await direct.query(`SELECT count(*)::int AS n FROM virtual_keys WHERE workspace_id = $1`, [owner.workspaceId]);
    proxy.partition();
    try {
      // All at once, as a gateway and a dashboard keep calling: the pool is held by the stalled ones.
      const [answers, live, readiness] = await Promise.all([Promise.all(routes().map(async ([name, call, , body]) => ({ name, body, res: await timed(call) }))), health(), ready()]);
      for (const { name, body, res } of answers) {
        expect([name, res.status, res.body]).toEqual([name, 503, body]);
        expect([name, res.ms < 10_000]).toEqual([name, true]);
      }
      expect([live.status, live.ms < 1000]).toEqual([200, true]);
      expect(readiness.status).toBe(503);
      expect(readiness.body).toMatchObject({ error: { database: { status: 'down', message: 'unreachable' } } });
      expect(readiness.ms).toBeLessThan(CHECK_TIMEOUT_MS + 1000);
    } finally {
      proxy.release();
    }
    // Nothing reached the server during the partition: the mint wrote nothing.
    expect((await direct.query(`SELECT count(*)::int AS n FROM virtual_keys WHERE workspace_id = $1`, [owner.workspaceId])).rows).toEqual(keysBefore.rows);
    await expectRecovered();
  }, 60_000);

  it('answers no 500 and no failure more than 1 s after every backend of the database is terminated under steady reads; a read whose connection was terminated runs again, so none fails', async () => {
    await expectRecovered();
    const answers: { status: number; started: number }[] = [];
    const until = Date.now() + 2500;
    const reads = [() => t.http().get(`${ws()}/keys`).set(bearer(owner)), () => t.http().get('/api/v1/me').set(bearer(owner))];
    const worker = async (i: number) => {
      while (Date.now() < until) {
        const started = Date.now();
        answers.push({ status: (await reads[i % 2]()).status, started });
      }
    };
    const workers = Promise.all([0, 1, 2, 3].map(worker));
    await new Promise((resolve) => setTimeout(resolve, 700));
    const terminatedAt = Date.now();
    expect(await terminateBackends()).toBeGreaterThan(0);
    await workers;
    const after = answers.filter((a) => a.started > terminatedAt);
    expect(after.length).toBeGreaterThan(20);
    expect(answers.filter((a) => a.status !== 200 && a.status !== 503)).toEqual([]);
    expect(answers.filter((a) => a.status !== 200 && a.started > terminatedAt + 1000)).toEqual([]);
    // Each read that met a terminated connection ran once more on a fresh one (without that retry,
    // 2 to 3 of about 100 answered 503 here).
    expect(answers.filter((a) => a.status !== 200)).toEqual([]);
  });

  it('keeps concurrent mints cut mid-flight whole: each answers 201 or 503, every key that exists has exactly one audit row, the chain verifies', async () => {
    await expectRecovered();
    let answered = 0;
    const mints = Array.from({ length: 60 }, (_, i) =>
      t
        .http()
        .post(`${ws()}/keys`)
        .set(bearer(owner))
        .send({ agent_id: `cut-${i}` })
        .then((res) => {
          answered++;
          return res;
        }),
    );
    // Cut every connection (a reset, as a restarting server does) once a few have answered, and
    // let PostgreSQL back at once: the mints in flight fail, the ones still waiting go on.
    while (answered < 3) await new Promise((resolve) => setTimeout(resolve, 2));
    await proxy.stop();
    await proxy.start();
    const results = await Promise.all(mints);
    for (const res of results) {
      if (res.status === 201) continue;
      expect([res.status, res.body]).toEqual([503, DATABASE_UNAVAILABLE]);
    }
    expect(results.filter((r) => r.status === 503).length).toBeGreaterThan(0);
    const keys = (await direct.query(`SELECT id, agent_id FROM virtual_keys WHERE workspace_id = $1 AND agent_id LIKE 'cut-%'`, [owner.workspaceId])).rows as { id: string }[];
    // Every answered mint exists; a 503 may have committed (its reply was lost): the list shows it.
    for (const res of results.filter((r) => r.status === 201)) expect(keys.map((k) => k.id)).toContain(res.body.key_id);
    const audited = (
      await direct.query(`SELECT target, count(*)::int AS n FROM audit_events WHERE workspace_id = $1 AND action = 'key.mint' AND target = ANY($2) GROUP BY target`, [
        owner.workspaceId,
        keys.map((k) => k.id),
      ])
    ).rows as { target: string; n: number }[];
    expect(audited.map((a) => [a.target, a.n]).sort()).toEqual(keys.map((k) => [k.id, 1]).sort());
    // No audit row of a mint that did not commit.
    const orphans = await direct.query(
      `SELECT count(*)::int AS n FROM audit_events a WHERE a.workspace_id = $1 AND a.action = 'key.mint' AND NOT EXISTS (SELECT 1 FROM virtual_keys k WHERE k.id = a.target)`,
      [owner.workspaceId],
    );
    expect(orphans.rows).toEqual([{ n: 0 }]);
    expect(await t.app.get(AuditTrailService).check(owner.workspaceId)).toMatchObject({ ok: true });
  });

  it('keeps concurrent policy publishes, approval votes and approval policy creations cut mid-flight whole: each answers its normal status or 503, one audit row per revision, vote and policy, the chain verifies', async () => {
    await expectRecovered();
    const publishers = await Promise.all([0, 1].map(() => t.signIn()));
    const ruler = await t.signIn();
    const rule = { rule_id: 'refunds', effect: 'allow', actions: ['tool.call'], tools: ['stripe.*'], environments: ['prod'], approver_roles: ['owner'], approver_user_ids: [], quorum: 1 };
    await t.http().post(`${ws()}/approval-policies`).set(bearer(owner)).send({ name: 'before-cut', rules: [rule] }).expect(200);
    const approvals: string[] = [];
    for (let i = 0; i < 12; i++) {
      const held = await t
        .http()
        .post(`/internal/v1/workspaces/${owner.workspaceId}/approvals`)
        .set('Authorization', await service())
        .send({ request_id: `req_cut_${i}`, key_id: 'key_0123456789abcdef01234567', tool: 'stripe.refund', invocation_tool: 'stripe.refund', connection_id: 'conn_0123456789abcdef01234567', env: 'prod', safe_summary: {}, reason: 'cut' })
        .expect(201);
      approvals.push(held.body.approval_id as string);
    }
    // The publishers' first drafts wait in their transactions on a workspace lock held here, so the
    // first cut surely meets a policy write mid-flight.
    const holder = new Client({ connectionString: t.databaseUrl });
    await holder.connect();
    await holder.query('BEGIN');
    await holder.query(`SELECT 1 FROM workspaces WHERE id = ANY($1) FOR UPDATE`, [publishers.map((op) => op.workspaceId)]);
    const answers: { what: string; status: number; body: unknown }[] = [];
    const settle = (what: string) => (res: request.Response) => {
      answers.push({ what, status: res.status, body: res.body });
      return res;
    };
    // Operators of two workspaces (as many as POLICY_COMPILER_CONCURRENCY compiles at once) each
    // store and publish drafts one after another (a publish is serial within a workspace)...
    const publishing = publishers.map(async (op) => {
      const path = `/api/v1/workspaces/${op.workspaceId}/policy`;
      for (let i = 0; i < 4; i++) {
        const draft = await t.http().put(path).set(bearer(op)).send({ cedar_text: `// cut ${i}\n` }).then(settle('draft'));
        if (draft.status !== 200) continue;
        const { draft_hash, current_revision_id } = draft.body as { draft_hash: string; current_revision_id?: string };
        await t.http().post(`${path}/publish`).set(bearer(op)).send({ expected_draft_hash: draft_hash, expected_revision_id: current_revision_id ?? null }).then(settle('publish'));
      }
    });
    // ...while the owner votes on every approval and another operator creates approval policies
    // (in a workspace of its own: a new rule set would turn the votes into 409s).
    const votes: Promise<request.Response>[] = [];
    const created: Promise<request.Response>[] = [];
    approvals.forEach((id, i) => {
      votes.push(t.http().post(`${ws()}/approvals/${id}/votes`).set(bearer(owner)).send({ decision: 'approve', reason: 'cut', expected_revision: 1 }).then(settle('vote')));
      created.push(t.http().post(`/api/v1/workspaces/${ruler.workspaceId}/approval-policies`).set(bearer(ruler)).send({ name: `cut-${i}`, rules: [rule] }).then(settle('approval policy')));
    });
    // Cut every connection (a reset, PostgreSQL back at once) once the publishers wait at the lock,
    // then each time a few more have answered: the mutations in flight fail, the ones still waiting go on.
    const waiting = async () =>
      (await direct.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND wait_event_type = 'Lock'`, [databaseName()])).rows[0].n as number;
    while ((await waiting()) < publishers.length) await new Promise((resolve) => setTimeout(resolve, 5));
    await proxy.stop();
    await proxy.start();
    await holder.query('ROLLBACK');
    await holder.end();
    let done = false;
    const cutting = (async () => {
      for (let next = answers.length + 3; !done; next += 6) {
        while (!done && answers.length < next) await new Promise((resolve) => setTimeout(resolve, 2));
        if (done) break;
        await proxy.stop();
        await proxy.start();
      }
    })();
    await Promise.all([...votes, ...created, ...publishing]);
    done = true;
    await cutting;
    const expected = { vote: 200, 'approval policy': 200, draft: 200, publish: 200 } as Record<string, number>;
    for (const a of answers) if (a.status !== expected[a.what]) expect([a.what, a.status, a.body]).toEqual([a.what, 503, DATABASE_UNAVAILABLE]);
    // The cuts met each kind of write.
    for (const what of ['vote', 'approval policy']) expect([what, answers.some((a) => a.what === what && a.status === 503)]).toEqual([what, true]);
    expect(['policy', answers.some((a) => (a.what === 'draft' || a.what === 'publish') && a.status === 503)]).toEqual(['policy', true]);
    expect(answers.filter((a) => a.what === 'publish' && a.status === 200).length).toBeGreaterThan(0);

    /** [target, audit rows] of `action` in this workspace, sorted. */
    const audited = async (workspaces: string[], actions: string[], target = 'target') =>
      (
        await direct.query(`SELECT ${target} AS target, count(*)::int AS n FROM audit_events WHERE workspace_id = ANY($1) AND action = ANY($2) GROUP BY 1 ORDER BY 1`, [
          workspaces,
          actions,
        ])
      ).rows.map((r: { target: string; n: number }) => [r.target, r.n]);
    const existing = async (workspaces: string[], sql: string) => (await direct.query(sql, [workspaces])).rows.map((r: { id: string }) => [r.id, 1]);
    // Every vote, approval policy and published revision that exists has exactly one audit row, and no audit row names one that does not.
    const voted = await existing([owner.workspaceId], `SELECT approval_id AS id FROM approval_votes WHERE workspace_id = ANY($1) ORDER BY 1`);
    expect(await audited([owner.workspaceId], ['approval.approve', 'approval.deny'])).toEqual(voted);
    const rulers = [owner.workspaceId, ruler.workspaceId];
    expect(await audited(rulers, ['approval_policy.create'])).toEqual(await existing(rulers, `SELECT id FROM approval_policies WHERE workspace_id = ANY($1) ORDER BY 1`));
    const published = publishers.map((op) => op.workspaceId);
    const revisions = await existing(published, `SELECT id FROM policy_revisions WHERE workspace_id = ANY($1) ORDER BY 1`);
    expect(await audited(published, ['policy.publish'], `detail->>'revision_id'`)).toEqual(revisions);
    // What answered its normal status was written.
    for (const res of await Promise.all(votes)) if (res.status === 200) expect(voted.map(([id]) => id)).toContain(res.body.approval_id);
    for (const a of answers.filter((a) => a.what === 'publish' && a.status === 200)) expect(revisions.map(([id]) => id)).toContain((a.body as { revision_id: string }).revision_id);
    for (const op of [owner, ruler, ...publishers]) expect(await t.app.get(AuditTrailService).check(op.workspaceId)).toMatchObject({ ok: true });
    await expectRecovered();
  });

  it('projects usage entries produced during an outage exactly once after it; the consumer pass fails within its bound meanwhile', async () => {
    const events = [0, 1, 2, 3, 4].map(() => usageEvent(owner.workspaceId));
    await proxy.stop();
    try {
      await gw.add('usage', ...events);
      const started = Date.now();
      await expect(gw.pass('usage')).rejects.toThrow();
      expect(Date.now() - started).toBeLessThan(5000);
    } finally {
      await proxy.start();
    }
    await gw.pass('usage', { claimIdleMs: 0 });
    await gw.pass('usage', { claimIdleMs: 0 });
    expect(await gw.pending('usage')).toBe(0);
    const stored = await direct.query(`SELECT event_id FROM usage_events WHERE workspace_id = $1 ORDER BY event_id`, [owner.workspaceId]);
    expect(stored.rows.map((r: { event_id: string }) => r.event_id)).toEqual(events.map((e) => e.event_id).sort());
  });
});
