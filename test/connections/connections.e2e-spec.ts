import { decodeJwt } from 'jose';
import { HotPath } from 'src/modules/publication/hot-path';
import { bearer, Operator, startTestApp, TestApp } from 'test/support/app';
import { GatewayEmulator } from 'test/support/gateway-emulator';
import { WorkspacesService } from 'src/modules/workspaces/workspaces.service';
import { activeModelConnection, expireCatalogSession, stageSnapshotVersion, reviveConnection } from 'test/support/factories';

const SEAL = '/internal/v1/credentials/seal';
const RESTRICTED = 'rk_live_restricted0123456789abcd';

describe('connections', () => {
  let t: TestApp;
  let gw: GatewayEmulator;
  const logs: string[] = [];
  let write: typeof process.stdout.write;

  beforeAll(async () => {
    write = process.stdout.write.bind(process.stdout);
    process.stdout.write = ((chunk: string | Uint8Array) => {
      logs.push(String(chunk));
      return true;
    }) as typeof process.stdout.write;
    gw = await GatewayEmulator.start();
    t = await startTestApp({ GATEWAY_URL: gw.url, LOG_LEVEL: 'debug' });
  });
  afterEach(() => gw.reset());
  afterAll(async () => {
    process.stdout.write = write;
    await t.close();
    await gw.stop();
  });

  const base = (op: Operator) => `/api/v1/workspaces/${op.workspaceId}`;
  const post = (op: Operator, path: string, body?: object) => t.http().post(`${base(op)}${path}`).set(bearer(op)).send(body);
  const start = (op: Operator, body: object) => post(op, '/connections', body);
  const list = async (op: Operator) => (await t.http().get(`${base(op)}/connections`).set(bearer(op)).expect(200)).body.connections;
  const row = async (id: string) => (await t.db.query(`SELECT * FROM connections WHERE id = $1`, [id]))[0];
  const audits = (ws: string, action: string) => t.db.query(`SELECT target, detail, actor_user_id FROM audit_events WHERE workspace_id = $1 AND action = $2 ORDER BY occurred_at`, [ws, action]);
  const version = async (ws: string) => (await t.db.query(`SELECT snapshot_version FROM workspaces WHERE id = $1`, [ws]))[0].snapshot_version as number;
  const snapshot = async (ws: string) => {
    const hot = t.app.get(HotPath);
    return JSON.parse((await hot.get(hot.snapshotName(ws)))!);
  };
  const activeStripe = async (op: Operator) => {
    const id = (await start(op, { slug: 'stripe', source: 'native' }).expect(200)).body.connection.connection_id;
    await post(op, `/connections/${id}/restricted-key`, { api_key: RESTRICTED }).expect(200);
    return id as string;
  };
  const registerBroker = (op: Operator, provider = 'broker_a') => post(op, '/catalog-providers', { provider, api_key: 'broker-key-abcdef123456' }).expect(200);

  describe('start', () => {
    it('starts a restricted-key connection: pending projection, next restricted_key, audited, republished', async () => {
      const op = await t.signIn();
      const before = await version(op.workspaceId);
      const res = await start(op, { slug: 'stripe', source: 'native' }).expect(200);
      const v = before + 1;
      expect(res.body).toEqual({
        schema_version: 1,
        connection: {
          schema_version: 1,
          connection_id: expect.stringMatching(/^conn_[0-9a-f]{24}$/),
          workspace_id: op.workspaceId,
          connector_slug: 'stripe',
          connector_display_name: 'Stripe',
          source: 'native',
          tier: 'native',
          status: 'pending',
          custody: 'obol',
          evidence_ceiling: 'gateway_observed',
          last4: null,
          expires_at: null,
          last_refreshed_at: null,
          refreshable: false,
          credential_revision: 0,
          pending_catalog_session: null,
          publication: { state: 'published', requested_version: v, published_version: v },
        },
        next: { kind: 'restricted_key' },
      });
      expect(await version(op.workspaceId)).toBe(v);
      expect(await audits(op.workspaceId, 'connection.start')).toEqual([
        { target: res.body.connection.connection_id, actor_user_id: op.userId, detail: { connection_id: res.body.connection.connection_id, source: 'native', status: 'pending', tier: 'native' } },
      ]);
    });

    it('refuses an unknown slug, an unavailable lane and invalid bodies', async () => {
      const op = await t.signIn();
      expect((await start(op, { slug: 'nope', source: 'native' }).expect(404)).body).toEqual({ detail: 'unknown catalog slug' });
      expect((await start(op, { slug: 'notion', source: 'native' }).expect(400)).body).toEqual({ detail: 'catalog source is not available' });
      expect((await start(op, { slug: 'discord', source: 'broker_b' }).expect(400)).body).toEqual({ detail: 'catalog source is not available' });
      // A broker lane needs the workspace's account at that broker.
      expect((await start(op, { slug: 'notion', source: 'broker_a' }).expect(400)).body).toEqual({ detail: 'catalog source is not available' });
      expect((await start(op, { slug: 'stripe', source: 'native', client_secret: 'x' }).expect(400)).body).toEqual({ detail: 'connection does not accept an oauth client secret' });
      expect((await start(op, { source: 'native' }).expect(422)).body).toEqual({ detail: [{ loc: ['body', 'slug'], msg: 'field required', type: 'missing' }] });
      expect((await start(op, { slug: 'stripe', source: 'broker_c' }).expect(422)).body.detail[0]).toMatchObject({ loc: ['body', 'source'], type: 'enum' });
      expect((await start(op, { slug: 'stripe', source: 'native', extra: 1 }).expect(422)).body.detail[0]).toEqual({ loc: ['body', 'extra'], msg: 'extra fields not permitted', type: 'extra_forbidden' });
      expect(await t.db.query(`SELECT 1 FROM connections WHERE workspace_id = $1`, [op.workspaceId])).toEqual([]);
    });

    it('reuses an unfinished pending shell of the same connector and custody, and refuses a second live connection', async () => {
      const op = await t.signIn();
      const first = (await start(op, { slug: 'stripe', source: 'native' }).expect(200)).body.connection.connection_id;
      const again = (await start(op, { slug: 'stripe', source: 'native' }).expect(200)).body.connection.connection_id;
      expect(again).toBe(first);
      await registerBroker(op);
      expect((await start(op, { slug: 'stripe', source: 'broker_a' }).expect(409)).body).toEqual({ detail: 'connector already has a live connection' });
      await post(op, `/connections/${first}/restricted-key`, { api_key: RESTRICTED }).expect(200);
      expect((await start(op, { slug: 'stripe', source: 'native' }).expect(409)).body).toEqual({ detail: 'connector already has a live connection' });
      await post(op, `/connections/${first}/disable`).expect(200);
      const fresh = (await start(op, { slug: 'stripe', source: 'native' }).expect(200)).body.connection.connection_id;
      expect(fresh).not.toBe(first);
    });

    it('keeps one live connection per connector under concurrent starts', async () => {
      const op = await t.signIn();
      await registerBroker(op);
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) => start(op, { slug: 'github', source: i % 2 ? 'broker_a' : 'native', client_id: 'cid' })),
      );
      const live = await t.db.query(`SELECT id, source FROM connections WHERE workspace_id = $1 AND kind = 'tool' AND status <> 'disabled'`, [op.workspaceId]);
      expect(live).toHaveLength(1);
      for (const res of results) {
        if (res.status === 200) expect(res.body.connection.connection_id).toBe(live[0].id);
        else expect(res.body).toEqual({ detail: 'connector already has a live connection' });
      }
      const winners = results.filter((r) => r.status === 200);
      expect(winners.every((r) => r.body.connection.source === live[0].source)).toBe(true);
      expect(results.filter((r) => r.status === 409)).toHaveLength(8 - winners.length);
    });
  });

  describe('restricted key', () => {
    it('seals the key through the gateway under a capability, stores only envelope, key id and last4, and activates', async () => {
      const op = await t.signIn();
      const id = (await start(op, { slug: 'stripe', source: 'native' }).expect(200)).body.connection.connection_id;
      const res = await post(op, `/connections/${id}/restricted-key`, { api_key: RESTRICTED }).expect(200);
      expect(res.body).toMatchObject({ connection_id: id, status: 'active', last4: 'abcd', credential_revision: 1, refreshable: false });
      expect(res.body).not.toHaveProperty('next');
      const stored = await row(id);
      expect(gw.unseal(stored.credential_envelope)).toEqual({ kind: 'api_key', secret: RESTRICTED });
      expect(stored).toMatchObject({ key_id: 'gwk_emulator_1', last4: 'abcd', credential_scheme: 'api_key' });
      const [call] = gw.callsTo(SEAL);
      expect(decodeJwt(call.body.capability as string)).toMatchObject({ aud: 'gateway-seal', ws: op.workspaceId, conn: id, apd: stored.auth_profile_digest, rev: 0 });
      expect(await audits(op.workspaceId, 'connection.credential.store')).toEqual([
        expect.objectContaining({ target: id, detail: { connection_id: id, last4: 'abcd', source: 'native', status: 'active', tier: 'native' } }),
      ]);
      const snap = await snapshot(op.workspaceId);
      expect(snap.connections).toEqual([
        expect.objectContaining({ connection_id: id, connector_slug: 'stripe', auth_type: 'api_key', credential: { envelope: stored.credential_envelope, key_id: 'gwk_emulator_1', scheme: 'api_key', expires_at: null } }),
      ]);
    });

    it('refuses a non api_key profile, a full live key and a connection that is not pending', async () => {
      const op = await t.signIn();
      const github = (await start(op, { slug: 'github', source: 'native', client_id: 'cid' }).expect(200)).body.connection.connection_id;
      expect((await post(op, `/connections/${github}/restricted-key`, { api_key: RESTRICTED }).expect(400)).body).toEqual({ detail: 'connection is not an api_key profile' });
      const stripe = (await start(op, { slug: 'stripe', source: 'native' }).expect(200)).body.connection.connection_id;
      expect((await post(op, `/connections/${stripe}/restricted-key`, { api_key: 'sk_live_full0123456789' }).expect(400)).body).toEqual({ detail: 'full live keys are refused; use a restricted key' });
      await post(op, `/connections/${stripe}/restricted-key`, { api_key: RESTRICTED }).expect(200);
      expect((await post(op, `/connections/${stripe}/restricted-key`, { api_key: RESTRICTED }).expect(409)).body).toEqual({ detail: 'connection is not pending' });
      expect((await post(op, `/connections/conn_000000000000000000000000/restricted-key`, { api_key: RESTRICTED }).expect(404)).body).toEqual({ detail: 'connection not found' });
      const other = await t.signIn();
      expect((await post(other, `/connections/${stripe}/restricted-key`, { api_key: RESTRICTED }).expect(404)).body).toEqual({ detail: 'connection not found' });
      expect((await post(op, `/connections/${stripe}/restricted-key`, {}).expect(422)).body.detail[0]).toMatchObject({ loc: ['body', 'api_key'], type: 'missing' });
      expect((await post(op, `/connections/${stripe}/restricted-key`, { api_key: 'a\nb' }).expect(422)).body.detail[0].loc).toEqual(['body', 'api_key']);
      expect(gw.callsTo(SEAL)).toHaveLength(1);
    });

    it('answers 502 upstream_error when the gateway fails, with nothing written', async () => {
      const op = await t.signIn();
      const id = (await start(op, { slug: 'stripe', source: 'native' }).expect(200)).body.connection.connection_id;
      const v = await version(op.workspaceId);
      gw.fail(SEAL, 503);
      const res = await post(op, `/connections/${id}/restricted-key`, { api_key: RESTRICTED }).expect(502);
      expect(res.body).toEqual({ error: { code: 'upstream_error', message: 'gateway call failed' } });
      expect(await row(id)).toMatchObject({ status: 'pending', credential_envelope: null, last4: null, credential_revision: 0 });
      expect(await audits(op.workspaceId, 'connection.credential.store')).toEqual([]);
      expect(await version(op.workspaceId)).toBe(v);
    });

    it('answers 502 upstream_error when the gateway cannot seal a client secret or a broker key', async () => {
      const op = await t.signIn();
      gw.fail(SEAL, 503);
      const upstream = { error: { code: 'upstream_error', message: 'gateway call failed' } };
      const started = await start(op, { slug: 'github', source: 'native', client_id: 'cid', client_secret: 'client-secret-1' }).expect(502);
      expect(started.body).toEqual(upstream);
      expect(await t.db.query(`SELECT 1 FROM connections WHERE workspace_id = $1 AND kind = 'tool'`, [op.workspaceId])).toEqual([]);
      // The broker account is registered (and published) before its key is sealed: it stays pending without one.
      const broker = await post(op, '/catalog-providers', { provider: 'broker_a', api_key: 'broker-key-abcdef123456' }).expect(502);
      expect(broker.body).toEqual(upstream);
      const [account] = await t.db.query(`SELECT status, credential_envelope FROM connections WHERE workspace_id = $1 AND kind = 'catalog_provider'`, [op.workspaceId]);
      expect(account).toEqual({ status: 'pending', credential_envelope: null });
    });
  });

  describe('disable, purge, discard', () => {
    it('disables idempotently, keeping the sealed credential and dropping it from the snapshot', async () => {
      const op = await t.signIn();
      const id = await activeStripe(op);
      const res = await post(op, `/connections/${id}/disable`).expect(200);
      expect(res.body).toMatchObject({ connection_id: id, status: 'disabled', last4: 'abcd' });
      expect((await row(id)).credential_envelope).not.toBeNull();
      expect((await snapshot(op.workspaceId)).connections).toEqual([]);
      const v = await version(op.workspaceId);
      await post(op, `/connections/${id}/disable`).expect(200);
      expect(await version(op.workspaceId)).toBe(v);
      expect(await audits(op.workspaceId, 'connection.disable')).toHaveLength(1);
    });

    it('purges irreversibly: clears envelopes and last4, bumps the revision, moves last4 into the audit detail; idempotent', async () => {
      const op = await t.signIn();
      const id = await activeStripe(op);
      const res = await post(op, `/connections/${id}/purge-credential`).expect(200);
      expect(res.body).toMatchObject({ status: 'disabled', last4: null, expires_at: null, credential_revision: 2 });
      expect(await row(id)).toMatchObject({ credential_envelope: null, refresh_envelope: null, client_secret_envelope: null, key_id: null, credential_scheme: null, last4: null });
      expect(await audits(op.workspaceId, 'connection.credential.purge')).toEqual([
        expect.objectContaining({ detail: { connection_id: id, last4: 'abcd', source: 'native', status: 'disabled', tier: 'native' } }),
      ]);
      const again = await post(op, `/connections/${id}/purge-credential`).expect(200);
      expect(again.body.credential_revision).toBe(2);
      expect(await audits(op.workspaceId, 'connection.credential.purge')).toHaveLength(1);
      expect((await post(op, `/connections/${id}/reconnect`, { api_key: RESTRICTED }).expect(200)).body.connection).toMatchObject({ status: 'active', last4: 'abcd' });
    });

    it('discards a never-credentialed connection (204) and keeps one that held a credential (409)', async () => {
      const op = await t.signIn();
      const shell = (await start(op, { slug: 'stripe', source: 'native' }).expect(200)).body.connection.connection_id;
      const res = await t.http().delete(`${base(op)}/connections/${shell}`).set(bearer(op)).expect(204);
      expect(res.body).toEqual({});
      expect(await row(shell)).toBeUndefined();
      expect(await audits(op.workspaceId, 'connection.discard')).toEqual([expect.objectContaining({ target: shell })]);
      const held = await activeStripe(op);
      await post(op, `/connections/${held}/purge-credential`).expect(200);
      expect((await t.http().delete(`${base(op)}/connections/${held}`).set(bearer(op)).expect(409)).body).toEqual({ detail: 'connection has held a credential and is kept as a record' });
      expect(await row(held)).toBeDefined();
      await t.http().delete(`${base(op)}/connections/${shell}`).set(bearer(op)).expect(404);
    });
  });

  describe('reconnect', () => {
    it('refuses two credentials, an active connection and credentials the profile does not take', async () => {
      const op = await t.signIn();
      const stripe = await activeStripe(op);
      expect((await post(op, `/connections/${stripe}/reconnect`, { api_key: RESTRICTED, client_secret: 'x' }).expect(400)).body).toEqual({ detail: 'provide only one credential' });
      expect((await post(op, `/connections/${stripe}/reconnect`, {}).expect(409)).body).toEqual({ detail: 'connection is not pending' });
      await post(op, `/connections/${stripe}/disable`).expect(200);
      expect((await post(op, `/connections/${stripe}/reconnect`, { client_secret: 'cs' }).expect(400)).body).toEqual({ detail: 'connection does not accept an oauth client secret' });
      expect((await post(op, `/connections/${stripe}/reconnect`, { api_key: 'sk_live_nope1234' }).expect(400)).body).toEqual({ detail: 'full live keys are refused; use a restricted key' });
      const github = (await start(op, { slug: 'github', source: 'native', client_id: 'cid' }).expect(200)).body.connection.connection_id;
      expect((await post(op, `/connections/${github}/reconnect`, { api_key: RESTRICTED }).expect(400)).body).toEqual({ detail: 'connection does not accept an api key' });
      expect((await post(op, `/connections/${github}/reconnect`, { client_secret: 'sk_live_secret' }).expect(400)).body).toEqual({ detail: 'full live keys are refused; use a restricted key' });
    });

    it('restores a disabled connection unless another live one holds the connector', async () => {
      const op = await t.signIn();
      const old = await activeStripe(op);
      await post(op, `/connections/${old}/disable`).expect(200);
      const res = await post(op, `/connections/${old}/reconnect`, {}).expect(200);
      expect(res.body).toMatchObject({ schema_version: 1, connection: { status: 'pending', credential_revision: 2 }, next: { kind: 'restricted_key' } });
      expect(await audits(op.workspaceId, 'connection.reconnect')).toHaveLength(1);
      await post(op, `/connections/${old}/disable`).expect(200);
      await activeStripe(op);
      expect((await post(op, `/connections/${old}/reconnect`, {}).expect(409)).body).toEqual({ detail: 'connector already has a live connection' });
    });
  });

  describe('catalog providers and federated connections', () => {
    it('registers a broker account with its key sealed, then re-keys it', async () => {
      const op = await t.signIn();
      const res = await registerBroker(op);
      expect(res.body).toEqual({
        schema_version: 1,
        connection: expect.objectContaining({ connector_slug: 'broker_a', connector_display_name: 'Broker A', source: 'broker_a', tier: 'federated', custody: 'federated', evidence_ceiling: 'untrusted', status: 'active', last4: '3456', credential_revision: 1 }),
        next: { kind: 'none' },
      });
      const id = res.body.connection.connection_id;
      expect(gw.unseal((await row(id)).credential_envelope)).toEqual({ kind: 'broker_api_key', secret: 'broker-key-abcdef123456' });
      expect(await audits(op.workspaceId, 'catalog.provider.register')).toHaveLength(1);
      const again = await post(op, '/catalog-providers', { provider: 'broker_a', api_key: 'other-broker-key-9999' }).expect(200);
      expect(again.body.connection).toMatchObject({ connection_id: id, last4: '9999', credential_revision: 2 });
      expect((await post(op, '/catalog-providers', { provider: 'broker_a', api_key: 'sk_live_abc' }).expect(400)).body).toEqual({ detail: 'full live keys are refused; use a restricted key' });
      expect((await post(op, '/catalog-providers', { provider: 'native', api_key: 'k' }).expect(422)).body.detail[0].loc).toEqual(['body', 'provider']);
      expect((await post(op, '/catalog-providers', { provider: 'broker_b', api_key: 'é'.repeat(4097) }).expect(422)).body.detail[0].loc).toEqual(['body', 'api_key']);
      expect((await post(op, '/catalog-providers', { provider: 'broker_b', api_key: 'a\u0007b' }).expect(422)).body.detail[0].loc).toEqual(['body', 'api_key']);
      expect((await post(op, '/catalog-providers', { provider: 'broker_b' }).expect(422)).body.detail[0]).toMatchObject({ loc: ['body', 'api_key'], type: 'missing' });
    });

    it('starts a federated connection with a single-use catalog session shown only to its initiator with connection.manage', async () => {
      const op = await t.signIn();
      await registerBroker(op, 'broker_b');
      const res = await start(op, { slug: 'notion', source: 'broker_b' }).expect(200);
      const next = res.body.next;
      expect(next).toEqual({ kind: 'catalog_redirect', url: expect.any(String), expires_at: expect.any(String), catalog_session_id: expect.stringMatching(/^cxs_[a-f0-9]{32}$/) });
      const url = new URL(next.url);
      expect(`${url.origin}${url.pathname}`).toBe('https://connect.broker-b.example/sessions');
      expect(url.searchParams.get('session')).toBe(next.catalog_session_id);
      const ttl = Date.parse(next.expires_at) - Date.now();
      expect(ttl).toBeGreaterThan(9 * 60 * 1000);
      expect(ttl).toBeLessThanOrEqual(10 * 60 * 1000);
      expect(res.body.connection).toMatchObject({ tier: 'federated', custody: 'federated', evidence_ceiling: 'untrusted', pending_catalog_session: { catalog_session_id: next.catalog_session_id, expires_at: next.expires_at } });
      const mine = (await list(op)).find((c: { connection_id: string }) => c.connection_id === res.body.connection.connection_id);
      expect(mine.pending_catalog_session).toEqual({ catalog_session_id: next.catalog_session_id, expires_at: next.expires_at });
      for (const role of ['viewer', 'admin'] as const) {
        const other = await t.member(op, role);
        const theirs = (await list(other)).find((c: { connection_id: string }) => c.connection_id === res.body.connection.connection_id);
        expect(theirs.pending_catalog_session).toBeNull();
      }
      await expireCatalogSession(t, next.catalog_session_id);
      expect((await list(op)).find((c: { connection_id: string }) => c.connection_id === res.body.connection.connection_id).pending_catalog_session).toBeNull();
    });

    it('validates every federated-complete input, then always refuses broker_verification_unavailable with nothing consumed', async () => {
      const op = await t.signIn();
      await registerBroker(op);
      const res = await start(op, { slug: 'slack', source: 'broker_a' }).expect(200);
      const id = res.body.connection.connection_id;
      const session = res.body.next.catalog_session_id;
      const good = { catalog_session_id: session, upstream_connection_id: 'upstream-123', mcp_url: 'https://mcp.broker-a.example/slack/mcp' };
      const complete = (body: object, conn = id) => post(op, `/connections/${conn}/federated-complete`, body);
      for (const upstream of ['', ' padded', 'padded ', 'a'.repeat(257), 'tab\tid', 'has:colon', 'a//b']) {
        expect((await complete({ ...good, upstream_connection_id: upstream }).expect(400)).body).toEqual({ detail: 'invalid upstream connection id' });
      }
      for (const url of ['https://evil.example/mcp', 'http://mcp.broker-a.example/mcp', 'https://user:pw@mcp.broker-a.example/mcp', 'https://mcp.broker-b.example/mcp', 'not a url']) {
        expect((await complete({ ...good, mcp_url: url }).expect(400)).body).toEqual({ detail: 'mcp target is not allowed' });
      }
      for (const other of [`cxs_${'0'.repeat(32)}`]) {
        expect((await complete({ ...good, catalog_session_id: other }).expect(409)).body).toEqual({ detail: 'catalog session is not available' });
      }
      const admin = await t.member(op, 'admin');
      expect((await post(admin, `/connections/${id}/federated-complete`, good).expect(409)).body).toEqual({ detail: 'catalog session is not available' });
      expect((await complete({ ...good, catalog_session_id: 'cxs_nothex' }).expect(422)).body.detail[0].loc).toEqual(['body', 'catalog_session_id']);
      expect((await complete(good).expect(409)).body).toEqual({ detail: 'broker_verification_unavailable' });
      expect((await complete(good).expect(409)).body).toEqual({ detail: 'broker_verification_unavailable' });
      const stored = await t.db.query(`SELECT consumed_at FROM catalog_sessions WHERE id = $1`, [session]);
      expect(stored).toEqual([{ consumed_at: null }]);
      expect(await row(id)).toMatchObject({ status: 'pending', credential_envelope: null });
      expect(await audits(op.workspaceId, 'connection.federated.complete')).toEqual([]);
      const stripe = await activeStripe(op);
      expect((await complete(good, stripe).expect(409)).body).toEqual({ detail: 'connection is not federated' });
      await post(op, `/connections/${id}/disable`).expect(200);
      expect((await complete(good).expect(409)).body).toEqual({ detail: 'connection is not pending' });
      await stageSnapshotVersion(t, op.workspaceId);
      await reviveConnection(t, id);
      expect((await complete(good).expect(409)).body).toEqual({ detail: 'connection snapshot is not published' });
    });

    it('reconnects a federated connection with a fresh session, deleting the superseded one', async () => {
      const op = await t.signIn();
      await registerBroker(op);
      const res = await start(op, { slug: 'slack', source: 'broker_a' }).expect(200);
      const again = await post(op, `/connections/${res.body.connection.connection_id}/reconnect`, {}).expect(200);
      expect(again.body.next.kind).toBe('catalog_redirect');
      expect(again.body.next.catalog_session_id).not.toBe(res.body.next.catalog_session_id);
      expect(await t.db.query(`SELECT id FROM catalog_sessions WHERE connection_id = $1`, [res.body.connection.connection_id])).toEqual([{ id: again.body.next.catalog_session_id }]);
    });
  });

  describe('lists and overview', () => {
    it('lists connections without model-provider rows and reports the overview connectors block', async () => {
      const op = await t.signIn();
      expect((await t.http().get(`${base(op)}/overview`).set(bearer(op)).expect(200)).body.connectors).toEqual({ total: 0, connections_active: 0 });
      const stripe = await activeStripe(op);
      await start(op, { slug: 'github', source: 'native', client_id: 'cid' }).expect(200);
      await activeModelConnection(t, op.workspaceId, op.userId);
      const connections = await list(op);
      expect(connections.map((c: { connector_slug: string }) => c.connector_slug)).toEqual(['stripe', 'github']);
      expect(connections[0].connection_id).toBe(stripe);
      expect((await t.http().get(`${base(op)}/overview`).set(bearer(op)).expect(200)).body.connectors).toEqual({ total: 2, connections_active: 1 });
    });
  });

  describe('authorization', () => {
    it('applies the matrix on every connection route: 401, 404 non-member, 403 below admin, 409 frozen', async () => {
      const owner = await t.signIn();
      const id = (await start(owner, { slug: 'stripe', source: 'native' }).expect(200)).body.connection.connection_id;
      const routes: [string, string, object?][] = [
        ['post', '/connections', { slug: 'stripe', source: 'native' }],
        ['post', `/connections/${id}/restricted-key`, { api_key: RESTRICTED }],
        ['post', `/connections/${id}/reconnect`, {}],
        ['post', `/connections/${id}/disable`],
        ['post', `/connections/${id}/purge-credential`],
        ['delete', `/connections/${id}`],
        ['post', `/connections/${id}/federated-complete`, { catalog_session_id: `cxs_${'a'.repeat(32)}`, upstream_connection_id: 'u', mcp_url: 'https://x.example' }],
        ['post', '/catalog-providers', { provider: 'broker_a', api_key: 'k' }],
      ];
      const stranger = await t.signIn();
      const developer = await t.member(owner, 'developer');
      const viewer = await t.member(owner, 'viewer');
      const call = (op: Operator | null, method: string, path: string, body?: object) => {
        const url = `${base(owner)}${path}`;
        const req = method === 'delete' ? t.http().delete(url) : t.http().post(url);
        return (op ? req.set(bearer(op)) : req).send(body);
      };
      for (const [method, path, body] of routes) {
        expect((await call(null, method, path, body).expect(401)).body).toEqual({ detail: 'session required' });
        expect((await call(stranger, method, path, body).expect(404)).body).toEqual({ detail: 'workspace not found' });
        for (const op of [viewer, developer]) expect((await call(op, method, path, body).expect(403)).body).toEqual({ detail: 'action not permitted' });
      }
      await t.app.get(WorkspacesService).setFlag(owner.workspaceId, 'frozen', true);
      for (const [method, path, body] of routes) expect((await call(owner, method, path, body).expect(409)).body).toEqual({ detail: 'workspace is frozen' });
      expect(await list(viewer)).toHaveLength(1);
      expect(await row(id)).toMatchObject({ status: 'pending' });
      expect(gw.callsTo(SEAL)).toHaveLength(0);
    });
  });

  it('never writes a secret into a log line, an audit detail or a response', async () => {
    const op = await t.signIn();
    logs.length = 0;
    const secrets = ['rk_live_topsecretvalue99', 'broker-secret-key-7777', 'client-secret-value-5555'];
    const id = (await start(op, { slug: 'stripe', source: 'native' }).expect(200)).body.connection.connection_id;
    const responses = [
      await post(op, `/connections/${id}/restricted-key`, { api_key: secrets[0] }),
      await post(op, '/catalog-providers', { provider: 'broker_a', api_key: secrets[1] }),
      await start(op, { slug: 'github', source: 'native', client_id: 'cid', client_secret: secrets[2] }),
      await post(op, `/connections/${id}/purge-credential`),
      await t.http().get(`${base(op)}/connections`).set(bearer(op)),
    ];
    gw.fail(SEAL, 500, { error: { code: 'boom', message: secrets[0] } });
    responses.push(await post(op, `/connections/${id}/reconnect`, { api_key: secrets[0] }));
    expect([responses[5].status, responses[5].body]).toEqual([502, { error: { code: 'upstream_error', message: 'gateway call failed' } }]);
    const audit = JSON.stringify(await t.db.query(`SELECT detail, target FROM audit_events WHERE workspace_id = $1`, [op.workspaceId]));
    const haystack = [logs.join(''), audit, ...responses.map((r) => JSON.stringify(r.body) + JSON.stringify(r.headers))].join('\n');
    for (const secret of secrets) expect(haystack).not.toContain(secret);
    expect(responses[2].body.connection.connection_id).toBeDefined();
    const github = await row(responses[2].body.connection.connection_id);
    expect(gw.unseal(github.client_secret_envelope)).toEqual({ kind: 'oauth_client_secret', secret: secrets[2] });
  });
});

describe('connections while the snapshot cannot publish', () => {
  let t: TestApp;
  let gw: GatewayEmulator;
  beforeAll(async () => {
    gw = await GatewayEmulator.start();
    t = await startTestApp({ GATEWAY_URL: gw.url, REDIS_URL: 'redis://127.0.0.1:1' });
  });
  afterAll(async () => {
    await t.close();
    await gw.stop();
  });

  it('answers next none, stores no key and seals nothing until the snapshot publishes', async () => {
    const op = await t.signIn();
    const res = await t.http().post(`/api/v1/workspaces/${op.workspaceId}/connections`).set(bearer(op)).send({ slug: 'stripe', source: 'native' }).expect(200);
    expect(res.body.next).toEqual({ kind: 'none' });
    expect(res.body.connection.publication.state).toBe('pending');
    const id = res.body.connection.connection_id;
    const key = await t.http().post(`/api/v1/workspaces/${op.workspaceId}/connections/${id}/restricted-key`).set(bearer(op)).send({ api_key: RESTRICTED }).expect(200);
    expect(key.body).toMatchObject({ status: 'pending', last4: null, credential_revision: 0 });
    const provider = await t.http().post(`/api/v1/workspaces/${op.workspaceId}/catalog-providers`).set(bearer(op)).send({ provider: 'broker_a', api_key: 'broker-key-1234' }).expect(200);
    expect(provider.body).toMatchObject({ connection: { status: 'pending', last4: null }, next: { kind: 'none' } });
    expect(gw.calls).toEqual([]);
  });
});
