import { INestApplication } from '@nestjs/common';
import { createApp } from 'src/bootstrap';
import { RefreshJob } from 'src/modules/connections/refresh.job';
import { GatewayClient } from 'src/modules/gateway/gateway.client';
import { HotPath } from 'src/modules/publication/hot-path';
import { bearer, Operator, startTestApp, TestApp } from 'test/support/app';
import { eventually } from 'test/support/eventually';
import { GatewayEmulator } from 'test/support/gateway-emulator';
import { endRefreshBackoff } from 'test/support/factories';

const REFRESH = '/internal/v1/credentials/refresh';

describe('credential refresh job', () => {
  let t: TestApp;
  let gw: GatewayEmulator;
  let job: RefreshJob;

  beforeAll(async () => {
    gw = await GatewayEmulator.start();
    t = await startTestApp({ GATEWAY_URL: gw.url, OAUTH_DEFAULT_CLIENT_ID: 'cid' });
    job = t.app.get(RefreshJob);
  });
  afterEach(() => gw.reset());
  afterAll(async () => {
    await t.close();
    await gw.stop();
  });

  const base = (op: Operator) => `/api/v1/workspaces/${op.workspaceId}`;
  const row = async (id: string) => (await t.db.query(`SELECT * FROM connections WHERE id = $1`, [id]))[0];
  /** An active OAuth connection through the real flow, its access token expiring in `lifetimeS`. */
  const connect = async (op: Operator, slug = 'github', lifetimeS = 120): Promise<string> => {
    gw.tokenLifetimeS = lifetimeS;
    const res = await t.http().post(`${base(op)}/connections`).set(bearer(op)).send({ slug, source: 'native' }).expect(200);
    const state = new URL(res.body.next.url).searchParams.get('state')!;
    const back = await t.http().get(`/oauth/callback?code=c&state=${state}`).expect(302);
    expect(back.headers.location).toContain('status=connected');
    gw.tokenLifetimeS = 3600;
    return res.body.connection.connection_id;
  };
  const messagesOf = async (ws: string) => t.db.query(`SELECT type, body FROM notification_messages WHERE workspace_id = $1 AND type <> 'audit.event' ORDER BY created_at, id`, [ws]);
  const snapshotOf = async (ws: string) => {
    const hot = t.app.get(HotPath);
    return JSON.parse((await hot.get(hot.snapshotName(ws)))!);
  };

  it('refreshes credentials nearing expiry, stores the new envelope, bumps last_refreshed_at and republishes', async () => {
    const op = await t.signIn();
    const due = await connect(op, 'github', 120);
    const later = await connect(op, 'linear', 3600);
    const before = await row(due);
    const version = (await t.db.query(`SELECT snapshot_version FROM workspaces WHERE id = $1`, [op.workspaceId]))[0].snapshot_version;
    gw.reset();

    expect(await job.runOnce()).toEqual({ refreshed: 1, deferred: 0, refused: 0, superseded: 0 });
    const calls = gw.callsTo(REFRESH);
    expect(calls.map((c) => c.body)).toEqual([
      { workspace_id: op.workspaceId, connection_id: due, connector_slug: 'github', refresh_envelope: before.refresh_envelope, credential_revision: before.credential_revision },
    ]);
    const after = await row(due);
    expect(after.credential_envelope).not.toBe(before.credential_envelope);
    expect(after.refresh_envelope).not.toBe(before.refresh_envelope);
    expect(after.expires_at.getTime()).toBeGreaterThan(before.expires_at.getTime());
    expect(after.last_refreshed_at).not.toBeNull();
    expect(after).toMatchObject({ status: 'active', credential_revision: before.credential_revision, refresh_attempts: 0, refresh_lease_until: null });
    expect((await row(later)).last_refreshed_at).toBeNull();
    const snapshot = await snapshotOf(op.workspaceId);
    expect(snapshot.version).toBe(version + 1);
    expect(snapshot.connections.find((c: { connection_id: string }) => c.connection_id === due).credential.envelope).toBe(after.credential_envelope);
    const [listed] = (await t.http().get(`${base(op)}/connections`).set(bearer(op)).expect(200)).body.connections;
    expect(listed.last_refreshed_at).toBe(after.last_refreshed_at.toISOString());

    expect(await job.runOnce()).toEqual({ refreshed: 0, deferred: 0, refused: 0, superseded: 0 });
  });

  it('with two instances claiming the same rows, refreshes each connection exactly once', async () => {
    const ops = await Promise.all([t.signIn(), t.signIn(), t.signIn()]);
    const ids: string[] = [];
    for (const op of ops) for (const slug of ['github', 'slack', 'gitlab']) ids.push(await connect(op, slug, 60));
    gw.reset();
    const second: INestApplication = await createApp(t.config, { url: t.config.databaseUrl!, poolSize: 5, stop: async () => undefined }, { jobs: false });
    await second.init();
    try {
      const passes = await Promise.all([job.runOnce(), second.get(RefreshJob).runOnce(), job.runOnce(), second.get(RefreshJob).runOnce()]);
      expect(passes.reduce((n, p) => n + p.refreshed, 0)).toBe(ids.length);
      const refreshed = gw.callsTo(REFRESH).map((c) => c.body.connection_id);
      expect(refreshed.sort()).toEqual([...ids].sort());
      for (const id of ids) expect((await row(id)).last_refreshed_at).not.toBeNull();
    } finally {
      await second.close();
    }
  });

  it('drops a result when the operator disabled the connection while the gateway was refreshing', async () => {
    const op = await t.signIn();
    const id = await connect(op, 'github', 120);
    gw.reset();
    const release = gw.hold(REFRESH);
    const pass = job.runOnce();
    await eventually(async () => expect(gw.callsTo(REFRESH)).toHaveLength(1));
    await t.http().post(`${base(op)}/connections/${id}/disable`).set(bearer(op)).expect(200);
    const disabled = await row(id);
    const version = (await t.db.query(`SELECT snapshot_version FROM workspaces WHERE id = $1`, [op.workspaceId]))[0].snapshot_version;
    release();

    expect(await pass).toEqual({ refreshed: 0, deferred: 0, refused: 0, superseded: 1 });
    expect(await row(id)).toEqual(disabled);
    expect((await t.db.query(`SELECT snapshot_version FROM workspaces WHERE id = $1`, [op.workspaceId]))[0].snapshot_version).toBe(version);
  });

  it('records a permanent refusal (invalid_grant), keeps the envelopes, stops retrying until a reconnect', async () => {
    const op = await t.signIn();
    const id = await connect(op, 'github', 60);
    const before = await row(id);
    gw.reset();
    gw.fail(REFRESH, 400, { error: { code: 'invalid_grant' } });
    expect(await job.runOnce()).toEqual({ refreshed: 0, deferred: 0, refused: 1, superseded: 0 });
    // The operator is told, once, in the refusal's transaction.
    expect((await messagesOf(op.workspaceId)).map((m: { type: string; body: string }) => [m.type, JSON.parse(m.body).data])).toEqual([
      ['connection.reauthorization_required', { connection_id: id, reason: 'invalid_grant', workspace_id: op.workspaceId }],
    ]);
    const after = await row(id);
    expect(after).toMatchObject({ status: 'pending', refresh_failure: 'invalid_grant', credential_envelope: before.credential_envelope, refresh_envelope: before.refresh_envelope, last4: before.last4 });
    const [listed] = (await t.http().get(`${base(op)}/connections`).set(bearer(op)).expect(200)).body.connections;
    expect(listed).toMatchObject({ status: 'pending', last4: before.last4, refreshable: true });
    expect((await snapshotOf(op.workspaceId)).connections).toEqual([]);
    expect(await job.runOnce()).toEqual({ refreshed: 0, deferred: 0, refused: 0, superseded: 0 });
    expect(gw.callsTo(REFRESH)).toHaveLength(1);
    expect(await messagesOf(op.workspaceId)).toHaveLength(1);

    gw.reset();
    const res = await t.http().post(`${base(op)}/connections/${id}/reconnect`).set(bearer(op)).send({}).expect(200);
    expect(res.body.next.kind).toBe('redirect');
    const state = new URL(res.body.next.url).searchParams.get('state')!;
    expect((await t.http().get(`/oauth/callback?code=c2&state=${state}`).expect(302)).headers.location).toContain('status=connected');
    expect(await row(id)).toMatchObject({ status: 'active', refresh_failure: null });
  });

  it('backs off after a temporary refusal or a timeout without touching the envelope', async () => {
    const op = await t.signIn();
    const id = await connect(op, 'github', 60);
    const before = await row(id);
    gw.reset();
    gw.fail(REFRESH, 429);
    expect(await job.runOnce()).toEqual({ refreshed: 0, deferred: 1, refused: 0, superseded: 0 });
    const after = await row(id);
    expect(after).toMatchObject({ status: 'active', refresh_attempts: 1, refresh_failure: null, credential_envelope: before.credential_envelope, refresh_envelope: before.refresh_envelope });
    expect(after.refresh_not_before.getTime()).toBeGreaterThan(Date.now());
    expect(await job.runOnce()).toEqual({ refreshed: 0, deferred: 0, refused: 0, superseded: 0 });

    await endRefreshBackoff(t, id);
    gw.reset();
    gw.hang(REFRESH);
    const client = t.app.get(GatewayClient);
    client.timeoutMs = 200;
    try {
      expect(await job.runOnce()).toEqual({ refreshed: 0, deferred: 1, refused: 0, superseded: 0 });
    } finally {
      client.timeoutMs = 10_000;
    }
    expect(await row(id)).toMatchObject({ status: 'active', refresh_attempts: 2, credential_envelope: before.credential_envelope });

    await endRefreshBackoff(t, id);
    gw.reset();
    expect(await job.runOnce()).toEqual({ refreshed: 1, deferred: 0, refused: 0, superseded: 0 });
    expect(await row(id)).toMatchObject({ refresh_attempts: 0, refresh_not_before: null });
    // A refusal that is not for good, a timeout and a success tell the operator nothing.
    expect(await messagesOf(op.workspaceId)).toEqual([]);
  });

  it('never refreshes a purged connection', async () => {
    const op = await t.signIn();
    const id = await connect(op, 'github', 60);
    await t.http().post(`${base(op)}/connections/${id}/purge-credential`).set(bearer(op)).expect(200);
    gw.reset();
    expect(await job.runOnce()).toEqual({ refreshed: 0, deferred: 0, refused: 0, superseded: 0 });
    expect(gw.callsTo(REFRESH)).toHaveLength(0);
    expect(await row(id)).toMatchObject({ status: 'disabled', credential_envelope: null, refresh_envelope: null });
  });
});
