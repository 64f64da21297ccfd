import { createHash } from 'node:crypto';
import { ExpiredGrantsJob } from 'src/modules/connections/expired-grants.job';
import { HotPath } from 'src/modules/publication/hot-path';
import { bearer, Operator, startTestApp, TestApp } from 'test/support/app';
import { REDIS_URL } from 'test/support/database';
import { GatewayEmulator } from 'test/support/gateway-emulator';
import { TcpProxy } from 'test/support/tcp-proxy';
import { WorkspacesService } from 'src/modules/workspaces/workspaces.service';
import { expireOAuthStates } from 'test/support/factories';

const EXCHANGE = '/internal/v1/oauth/exchange';
const PUBLIC_URL = 'https://control.example.test';
const WEB_URL = 'https://dash.example.test';

describe('native OAuth with PKCE', () => {
  let t: TestApp;
  let gw: GatewayEmulator;

  beforeAll(async () => {
    gw = await GatewayEmulator.start();
    t = await startTestApp({ GATEWAY_URL: gw.url, PUBLIC_URL, WEB_URL });
  });
  afterEach(() => gw.reset());
  afterAll(async () => {
    await t.close();
    await gw.stop();
  });

  const base = (op: Operator) => `/api/v1/workspaces/${op.workspaceId}`;
  const begin = async (op: Operator, body: object = { client_id: 'client-123', client_secret: 'client-secret-abc' }) => {
    const res = await t.http().post(`${base(op)}/connections`).set(bearer(op)).send({ slug: 'github', source: 'native', ...body }).expect(200);
    return { id: res.body.connection.connection_id as string, url: new URL(res.body.next.url), body: res.body };
  };
  const callback = (query: Record<string, string>) => t.http().get(`/oauth/callback?${new URLSearchParams(query)}`);
  const landed = (res: { status: number; headers: Record<string, string> }) => {
    expect(res.status).toBe(302);
    const url = new URL(res.headers.location);
    expect(`${url.origin}${url.pathname}`).toBe(`${WEB_URL}/dashboard/connectors`);
    expect([...url.searchParams.keys()].sort()).toEqual(['connection_id', 'status']);
    return { connection_id: url.searchParams.get('connection_id'), status: url.searchParams.get('status') };
  };
  const invalid = async (query: Record<string, string>) => {
    const res = await callback(query).expect(400);
    expect(res.body).toEqual({ detail: 'invalid or expired oauth state' });
  };
  const row = async (id: string) => (await t.db.query(`SELECT * FROM connections WHERE id = $1`, [id]))[0];

  it('issues an authorize URL with PKCE and completes through the callback', async () => {
    const op = await t.signIn();
    const { id, url, body } = await begin(op);
    expect(body.next).toEqual({ kind: 'redirect', url: expect.any(String), expires_at: expect.any(String) });
    expect(body.connection).toMatchObject({ status: 'pending', refreshable: true });
    expect(`${url.origin}${url.pathname}`).toBe('https://github.com/login/oauth/authorize');
    expect([...url.searchParams.keys()].sort()).toEqual(['client_id', 'code_challenge', 'code_challenge_method', 'redirect_uri', 'response_type', 'scope', 'state']);
    expect(url.searchParams.get('client_id')).toBe('client-123');
    expect(url.searchParams.get('redirect_uri')).toBe(`${PUBLIC_URL}/oauth/callback`);
    expect(url.searchParams.get('scope')).toBe('repo read:org');
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    expect(url.searchParams.get('response_type')).toBe('code');
    const state = url.searchParams.get('state')!;
    const ttl = Date.parse(body.next.expires_at) - Date.now();
    expect(ttl).toBeGreaterThan(9 * 60 * 1000);
    expect(ttl).toBeLessThanOrEqual(10 * 60 * 1000);
    // Only the state's hash is stored; the client secret only sealed and never echoed.
    const states = await t.db.query(`SELECT * FROM oauth_states WHERE connection_id = $1`, [id]);
    expect(states).toHaveLength(1);
    expect(states[0].state_hash).toBe(createHash('sha256').update(state).digest('hex'));
    expect(JSON.stringify(states)).not.toContain(state);
    expect(JSON.stringify(body)).not.toContain('client-secret-abc');
    const stored = await row(id);
    expect(gw.unseal(stored.client_secret_envelope)).toEqual({ kind: 'oauth_client_secret', secret: 'client-secret-abc' });

    const res = await callback({ code: 'vendor-code-1', state });
    expect(landed(res)).toEqual({ connection_id: id, status: 'connected' });
    const [exchange] = gw.callsTo(EXCHANGE);
    expect(exchange.body).toEqual({
      workspace_id: op.workspaceId,
      connection_id: id,
      connector_slug: 'github',
      code: 'vendor-code-1',
      code_verifier: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      redirect_uri: `${PUBLIC_URL}/oauth/callback`,
      client_id: 'client-123',
      client_secret_envelope: stored.client_secret_envelope,
    });
    expect(createHash('sha256').update(exchange.body.code_verifier as string).digest('base64url')).toBe(url.searchParams.get('code_challenge'));
    const active = await row(id);
    expect(active).toMatchObject({ status: 'active', credential_scheme: 'bearer', credential_revision: 1 });
    expect(gw.unseal(active.credential_envelope)?.kind).toBe('oauth_access_token');
    expect(gw.unseal(active.refresh_envelope)?.kind).toBe('oauth_refresh_token');
    const [listed] = (await t.http().get(`${base(op)}/connections`).set(bearer(op)).expect(200)).body.connections;
    expect(listed).toMatchObject({ status: 'active', refreshable: true, expires_at: expect.any(String), last4: active.last4, credential_revision: 1 });
    expect(await t.db.query(`SELECT actor_user_id, target FROM audit_events WHERE workspace_id = $1 AND action = 'connection.credential.store'`, [op.workspaceId])).toEqual([
      { actor_user_id: op.userId, target: id },
    ]);
    const hot = t.app.get(HotPath);
    const snapshot = JSON.parse((await hot.get(hot.snapshotName(op.workspaceId)))!);
    expect(snapshot.connections).toEqual([expect.objectContaining({ connection_id: id, auth_type: 'oauth2', credential: expect.objectContaining({ envelope: active.credential_envelope, scheme: 'bearer' }) })]);

    // Single use: the replayed state is refused and nothing is exchanged again.
    await invalid({ code: 'vendor-code-1', state });
    expect(gw.callsTo(EXCHANGE)).toHaveLength(1);
  });

  it('answers 400 for a missing, malformed, unknown or expired state, with no Authorization needed', async () => {
    const op = await t.signIn();
    await invalid({ code: 'x' });
    await invalid({ code: 'x', state: 'short' });
    await invalid({ code: 'x', state: 'A'.repeat(43) });
    const { url } = await begin(op);
    const state = url.searchParams.get('state')!;
    await expireOAuthStates(t, '1 second');
    await invalid({ code: 'x', state });
    expect(gw.callsTo(EXCHANGE)).toHaveLength(0);
    const res = await t.http().get(`/oauth/callback?state=${state}`).set('Authorization', 'Bearer garbage').expect(400);
    expect(res.body).toEqual({ detail: 'invalid or expired oauth state' });
  });

  it('redirects with status error for a vendor error or a missing code, consuming the state', async () => {
    const op = await t.signIn();
    const first = await begin(op);
    const s1 = first.url.searchParams.get('state')!;
    expect(landed(await callback({ error: 'access_denied', code: 'ignored', state: s1 }))).toEqual({ connection_id: first.id, status: 'error' });
    await invalid({ code: 'c', state: s1 });
    const again = await begin(op);
    expect(again.id).toBe(first.id);
    expect(landed(await callback({ state: again.url.searchParams.get('state')! }))).toEqual({ connection_id: first.id, status: 'error' });
    expect(gw.callsTo(EXCHANGE)).toHaveLength(0);
    expect(await row(first.id)).toMatchObject({ status: 'pending', credential_envelope: null });
  });

  it('re-derives authority at callback time: a demoted, removed or frozen operator gets status error', async () => {
    const owner = await t.signIn();
    const admin = await t.member(owner, 'admin');
    const demoted = await begin(admin);
    await t.http().put(`${base(owner)}/members/${admin.userId}`).set(bearer(owner)).send({ role: 'developer' }).expect(200);
    expect(landed(await callback({ code: 'c', state: demoted.url.searchParams.get('state')! }))).toEqual({ connection_id: demoted.id, status: 'error' });
    expect(gw.callsTo(EXCHANGE)).toHaveLength(0);
    expect(await row(demoted.id)).toMatchObject({ status: 'pending', credential_envelope: null });

    const other = await t.member(owner, 'admin');
    const removed = await begin(other);
    await t.http().delete(`${base(owner)}/members/${other.userId}`).set(bearer(owner)).expect(204);
    expect(landed(await callback({ code: 'c', state: removed.url.searchParams.get('state')! })).status).toBe('error');

    const frozen = await begin(owner);
    await t.app.get(WorkspacesService).setFlag(owner.workspaceId, 'frozen', true);
    expect(landed(await callback({ code: 'c', state: frozen.url.searchParams.get('state')! })).status).toBe('error');
    expect(gw.callsTo(EXCHANGE)).toHaveLength(0);
  });

  it('gives status error when the exchange fails, and when the connection moved on meanwhile', async () => {
    const op = await t.signIn();
    const { id, url } = await begin(op);
    gw.fail(EXCHANGE, 502);
    expect(landed(await callback({ code: 'c', state: url.searchParams.get('state')! }))).toEqual({ connection_id: id, status: 'error' });
    expect(await row(id)).toMatchObject({ status: 'pending', credential_envelope: null, credential_revision: 0 });
    gw.reset();
    const next = await begin(op);
    await t.http().post(`${base(op)}/connections/${id}/disable`).set(bearer(op)).expect(200);
    // Disabling drops outstanding states: the state no longer redeems.
    await invalid({ code: 'c', state: next.url.searchParams.get('state')! });
  });

  it('reconnect bumps the credential revision, supersedes outstanding states and issues a fresh redirect', async () => {
    const op = await t.signIn();
    const first = await begin(op);
    const res = await t.http().post(`${base(op)}/connections/${first.id}/reconnect`).set(bearer(op)).send({ client_secret: 'new-client-secret' }).expect(200);
    expect(res.body.connection).toMatchObject({ status: 'pending', credential_revision: 1 });
    expect(res.body.next.kind).toBe('redirect');
    await invalid({ code: 'c', state: first.url.searchParams.get('state')! });
    const state = new URL(res.body.next.url).searchParams.get('state')!;
    expect(landed(await callback({ code: 'c', state })).status).toBe('connected');
    const stored = await row(first.id);
    expect(stored.credential_revision).toBe(2);
    expect(gw.unseal(stored.client_secret_envelope)).toEqual({ kind: 'oauth_client_secret', secret: 'new-client-secret' });
    expect(gw.callsTo(EXCHANGE)[0].body.client_secret_envelope).toBe(stored.client_secret_envelope);
  });

  it('requires an OAuth client id when the deployment has no default', async () => {
    const op = await t.signIn();
    const res = await t.http().post(`${base(op)}/connections`).set(bearer(op)).send({ slug: 'github', source: 'native' }).expect(400);
    expect(res.body).toEqual({ detail: 'oauth client id is required' });
    expect(await t.db.query(`SELECT 1 FROM connections WHERE workspace_id = $1`, [op.workspaceId])).toEqual([]);
  });
});

describe('deployment default OAuth client id', () => {
  it('is used when the request names none', async () => {
    const gw = await GatewayEmulator.start();
    const t = await startTestApp({ GATEWAY_URL: gw.url, OAUTH_DEFAULT_CLIENT_ID: 'deployment-client' });
    try {
      const op = await t.signIn();
      const res = await t.http().post(`/api/v1/workspaces/${op.workspaceId}/connections`).set(bearer(op)).send({ slug: 'linear', source: 'native' }).expect(200);
      const url = new URL(res.body.next.url);
      expect(`${url.origin}${url.pathname}`).toBe('https://linear.app/oauth/authorize');
      expect(url.searchParams.get('client_id')).toBe('deployment-client');
      expect(url.searchParams.get('scope')).toBe('read,write');
    } finally {
      await t.close();
      await gw.stop();
    }
  });
});

describe('expired OAuth states', () => {
  let t: TestApp;
  let gw: GatewayEmulator;
  beforeAll(async () => {
    gw = await GatewayEmulator.start();
    t = await startTestApp({ GATEWAY_URL: gw.url, PUBLIC_URL, WEB_URL });
  });
  afterAll(async () => {
    await t.close();
    await gw.stop();
  });

  it('are deleted a day after they expired; live and recently expired ones stay', async () => {
    const op = await t.signIn();
    const start = (slug: string) =>
      t.http().post(`/api/v1/workspaces/${op.workspaceId}/connections`).set(bearer(op)).send({ slug, source: 'native', client_id: 'c', client_secret: 's' }).expect(200);
    const old = (await start('github')).body.connection.connection_id;
    const recent = (await start('gitlab')).body.connection.connection_id;
    const live = (await start('linear')).body.connection.connection_id;
    await expireOAuthStates(t, '25 hours', old);
    await expireOAuthStates(t, '23 hours', recent);
    expect(await t.app.get(ExpiredGrantsJob).purge()).toBe(1);
    const left = await t.db.query(`SELECT connection_id FROM oauth_states WHERE connection_id = ANY($1) ORDER BY connection_id`, [[old, recent, live]]);
    expect(left.map((r: { connection_id: string }) => r.connection_id).sort()).toEqual([recent, live].sort());
  });
});

describe('OAuth callback while the snapshot cannot publish', () => {
  let proxy: TcpProxy;
  let t: TestApp;
  let gw: GatewayEmulator;
  beforeAll(async () => {
    gw = await GatewayEmulator.start();
    proxy = await TcpProxy.start(REDIS_URL);
    t = await startTestApp({ GATEWAY_URL: gw.url, PUBLIC_URL, WEB_URL, REDIS_URL: proxy.url });
  });
  afterAll(async () => {
    await t.close();
    await proxy.stop();
    await gw.stop();
  });

  it('stores the credential and lands on status pending; the publication stays staged', async () => {
    const op = await t.signIn();
    const res = await t.http().post(`/api/v1/workspaces/${op.workspaceId}/connections`).set(bearer(op)).send({ slug: 'github', source: 'native', client_id: 'c', client_secret: 's' }).expect(200);
    const id = res.body.connection.connection_id;
    const state = new URL(res.body.next.url).searchParams.get('state')!;
    await proxy.stop();
    try {
      const landed = await t.http().get(`/oauth/callback?${new URLSearchParams({ code: 'vendor-code', state })}`).expect(302);
      expect(landed.headers.location).toBe(`${WEB_URL}/dashboard/connectors?connection_id=${id}&status=pending`);
      const [row] = await t.db.query(`SELECT status, credential_envelope IS NOT NULL AS stored FROM connections WHERE id = $1`, [id]);
      expect(row).toEqual({ status: 'active', stored: true });
      const [versions] = await t.db.query(`SELECT snapshot_version > published_version AS unsettled FROM workspaces WHERE id = $1`, [op.workspaceId]);
      expect(versions).toEqual({ unsettled: true });
      expect(await t.db.query(`SELECT 1 FROM audit_events WHERE action = 'connection.credential.store' AND target = $1`, [id])).toHaveLength(1);
    } finally {
      await proxy.start();
    }
  });
});
