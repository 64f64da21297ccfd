import { createClient, RedisClientType } from 'redis';
import { decodeJwt } from 'jose';
import { signServiceToken } from 'src/platform/auth/service-token';
import { expectAccessMatrix, roleMembers } from 'test/support/access-matrix';
import { bearer, Operator, SERVICE_SECRET, startTestApp, TestApp } from 'test/support/app';
import { REDIS_URL } from 'test/support/database';
import { GatewayEmulator } from 'test/support/gateway-emulator';
import { TcpProxy } from 'test/support/tcp-proxy';

const SEAL = '/internal/v1/credentials/seal';
const KEY = 'pk-model-secret-0123456789WXYZ';

describe('model providers', () => {
  let t: TestApp;
  let gw: GatewayEmulator;
  let redis: RedisClientType;
  let owner: Operator;

  beforeAll(async () => {
    gw = await GatewayEmulator.start();
    t = await startTestApp({ GATEWAY_URL: gw.url });
    redis = createClient({ url: REDIS_URL });
    await redis.connect();
    owner = await t.signIn();
  });
  afterAll(async () => {
    redis.destroy();
    await t.close();
    await gw.stop();
  });
  beforeEach(() => gw.reset());

  const path = (ws: string) => `/api/v1/workspaces/${ws}/model-providers`;
  const create = (op: Operator, body: Record<string, unknown>, ws = op.workspaceId) => t.http().post(path(ws)).set(bearer(op)).send(body);
  const list = (op: Operator, ws = op.workspaceId) => t.http().get(path(ws)).set(bearer(op));
  const disable = (op: Operator, id: string, ws = op.workspaceId) => t.http().post(`${path(ws)}/${id}/disable`).set(bearer(op));
  const basic = (pattern = 'gpt-4o*', extra: Record<string, unknown> = {}) => ({ provider: 'provider_a', api_key: KEY, model_pattern: pattern, upstream_model: 'gpt-4o-2024-08-06', ...extra });
  const rows = (ws: string) => t.db.query(`SELECT * FROM connections WHERE workspace_id = $1 AND kind = 'model' ORDER BY created_at, id`, [ws]);
  const audits = (ws: string) =>
    t.db.query(`SELECT action, target, detail FROM audit_events WHERE workspace_id = $1 AND action LIKE 'model_connection.%' ORDER BY occurred_at, id`, [ws]);
  const versions = async (ws: string) => (await t.db.query(`SELECT snapshot_version, published_version FROM workspaces WHERE id = $1`, [ws]))[0];
  const published = async (ws: string) => JSON.parse((await redis.get(`${t.config.redisPrefix}:snapshot:${ws}`)) ?? 'null');
  const internalSnapshot = async (ws: string) =>
    (await t.http().get(`/internal/v1/workspaces/${ws}/snapshot`).set('Authorization', `Bearer ${await signServiceToken(SERVICE_SECRET, 'gateway', 'control')}`).expect(200)).body;

  describe('create', () => {
    it('inserts pending, publishes, seals the key through the gateway, then answers active with the model published', async () => {
      const op = await t.signIn();
      const before = await versions(op.workspaceId);
      const res = await create(op, basic()).expect(200);
      expect(res.body).toEqual({
        schema_version: 1,
        connection: {
          schema_version: 1,
          connection_id: expect.stringMatching(/^conn_[0-9a-f]{24}$/),
          workspace_id: op.workspaceId,
          provider: 'provider_a',
          display_name: 'Provider A',
          model_pattern: 'gpt-4o*',
          upstream_model: 'gpt-4o-2024-08-06',
          base_url: 'https://api.provider-a.com/v1',
          status: 'active',
          last4: 'WXYZ',
          credential_revision: 1,
          publication: { state: 'published', requested_version: before.snapshot_version + 2, published_version: before.snapshot_version + 2 },
        },
      });
      const id = res.body.connection.connection_id;

      // One seal, bound to the workspace, the connection, its auth profile and revision 0.
      const seals = gw.callsTo(SEAL);
      expect(seals).toHaveLength(1);
      expect(seals[0].body).toMatchObject({ secret_kind: 'model_api_key', secret: KEY });
      const [row] = await rows(op.workspaceId);
      expect(decodeJwt(seals[0].body.capability as string)).toMatchObject({ aud: 'gateway-seal', ws: op.workspaceId, conn: id, apd: row.auth_profile_digest, rev: 0 });

      // Stored: the envelope (which holds the key), never the key itself.
      expect(row).toMatchObject({ status: 'active', connector_slug: 'provider_a', target: 'model_provider', last4: 'WXYZ', key_id: 'gwk_emulator_1', credential_scheme: 'bearer' });
      expect(row.model_config).toEqual({ model_pattern: 'gpt-4o*', upstream_model: 'gpt-4o-2024-08-06', base_url: 'https://api.provider-a.com/v1' });
      expect(gw.unseal(row.credential_envelope)).toEqual({ kind: 'model_api_key', secret: KEY });
      expect(JSON.stringify(row)).not.toContain(KEY);

      expect(await audits(op.workspaceId)).toEqual([
        { action: 'model_connection.start', target: id, detail: { connection_id: id, provider_id: 'provider_a', model_pattern: 'gpt-4o*', status: 'pending' } },
        { action: 'model_connection.credential.store', target: id, detail: { connection_id: id, provider_id: 'provider_a', model_pattern: 'gpt-4o*', status: 'active', last4: 'WXYZ' } },
      ]);
      expect(JSON.stringify(await t.db.query(`SELECT detail FROM audit_events WHERE workspace_id = $1`, [op.workspaceId]))).not.toContain(KEY);

      const model = { name: 'gpt-4o*', provider: 'provider_a', base_url: 'https://api.provider-a.com/v1', upstream_model: 'gpt-4o-2024-08-06', credential: row.credential_envelope, connection_id: id, fallbacks: [] };
      const snapshot = await published(op.workspaceId);
      expect(snapshot.models).toEqual([model]);
      expect(snapshot.connections).toEqual([]);
      expect((await internalSnapshot(op.workspaceId)).models).toEqual([model]);
    });

    it('uses each provider definition: provider_b authenticates with x-api-key', async () => {
      const op = await t.signIn();
      const b = await create(op, { ...basic('claude-*'), provider: 'provider_b', upstream_model: 'claude-3-5-sonnet' }).expect(200);
      expect(b.body.connection).toMatchObject({ provider: 'provider_b', display_name: 'Provider B', base_url: 'https://api.provider-b.com/v1', status: 'active' });
      const c = await create(op, { ...basic('mixtral'), provider: 'provider_c', upstream_model: 'mixtral-8x7b' }).expect(200);
      expect(c.body.connection).toMatchObject({ provider: 'provider_c', base_url: 'https://api.provider-c.com/v1' });
      expect((await rows(op.workspaceId)).map((r: { credential_scheme: string }) => r.credential_scheme)).toEqual(['x-api-key', 'bearer']);
    });

    it('stores a compat_custom base URL with the authority lowercased and the trailing slash removed', async () => {
      const op = await t.signIn();
      const res = await create(op, { ...basic('local-*'), provider: 'compat_custom', base_url: 'https://LLM.Internal.Example:8443/Gateway/v1/' }).expect(200);
      expect(res.body.connection).toMatchObject({ provider: 'compat_custom', display_name: 'Custom compatible endpoint', base_url: 'https://llm.internal.example:8443/Gateway/v1', status: 'active' });
      expect((await published(op.workspaceId)).models[0].base_url).toBe('https://llm.internal.example:8443/Gateway/v1');
    });

    describe('refusals (nothing written, no key sent)', () => {
      let op: Operator;
      beforeAll(async () => {
        op = await t.signIn();
      });
      afterEach(async () => {
        expect(await rows(op.workspaceId)).toEqual([]);
        expect(await audits(op.workspaceId)).toEqual([]);
        expect(gw.callsTo(SEAL)).toEqual([]);
      });
      const refused = async (body: Record<string, unknown>, detail: string) => expect((await create(op, body).expect(400)).body).toEqual({ detail });

      it('answers 400 for a pattern outside the rules', async () => {
        const shape = 'model_pattern may contain one * only as the whole pattern, a prefix or a suffix';
        const chars = 'model_pattern must be 1-256 characters without whitespace or control characters';
        for (const pattern of ['gpt*4o', '**', '*gpt*']) await refused(basic(pattern), shape);
        for (const pattern of ['', 'gpt 4o', 'gpt\t4o', 'gpt\u00854o', 'x'.repeat(257)]) await refused(basic(pattern), chars);
      });
      it('answers 400 for an upstream model with a star, whitespace, control characters or a bad length', async () => {
        await refused({ ...basic(), upstream_model: 'gpt-*' }, 'upstream_model must not contain *');
        for (const upstream_model of ['', 'gpt 4o', 'gpt\n4o', 'x'.repeat(257)]) {
          await refused({ ...basic(), upstream_model }, 'upstream_model must be 1-256 characters without whitespace or control characters');
        }
      });
      it('answers 400 for a base URL the rules refuse, a missing one for compat_custom, or one given to a fixed provider', async () => {
        const invalid = 'base_url must be an https URL without userinfo, query or fragment whose path ends in /v1';
        for (const base_url of ['http://llm.example/v1', 'https://u:p@llm.example/v1', 'https://llm.example/v1?x=1', 'https://llm.example/v1#f', 'https://llm.example:70000/v1', 'https://llm.example/v2', 'not a url']) {
          await refused({ ...basic(), provider: 'compat_custom', base_url }, invalid);
        }
        await refused({ ...basic(), provider: 'compat_custom' }, 'base_url is required for compat_custom');
        await refused({ ...basic(), base_url: 'https://llm.example/v1' }, 'base_url is only accepted for compat_custom');
      });
      it('refuses a key beginning sk_live_', async () => {
        await refused({ ...basic(), api_key: 'sk_live_0123456789abcdef' }, 'full live keys are refused; use a restricted key');
      });
      it('answers 422 for an unknown provider, missing fields, extra fields and a key with control characters', async () => {
        const fields = async (body: Record<string, unknown>) => (await create(op, body).expect(422)).body.detail.map((d: { loc: unknown[]; type: string }) => [d.loc, d.type]);
        expect(await fields({ ...basic(), provider: 'provider_z' })).toEqual([[['body', 'provider'], 'enum']]);
        expect(await fields({})).toEqual([
          [['body', 'provider'], 'missing'],
          [['body', 'api_key'], 'missing'],
          [['body', 'model_pattern'], 'missing'],
          [['body', 'upstream_model'], 'missing'],
        ]);
        expect(await fields({ ...basic(), fallbacks: ['x'] })).toEqual([[['body', 'fallbacks'], 'extra_forbidden']]);
        expect(await fields({ ...basic(), api_key: 'abc\ndef' })).toEqual([[['body', 'api_key'], 'string_pattern_mismatch']]);
        expect(await fields({ ...basic(), api_key: '' })).toEqual([[['body', 'api_key'], 'value_error']]);
      });
    });

    it('answers 409 while a pending or active connection claims the pattern; a disabled one frees it', async () => {
      const op = await t.signIn();
      const first = (await create(op, basic('shared-*')).expect(200)).body.connection;
      gw.reset();
      expect((await create(op, { ...basic('shared-*'), provider: 'provider_c' }).expect(409)).body).toEqual({ detail: 'model pattern is already claimed by a connection' });
      expect(gw.callsTo(SEAL)).toEqual([]);
      await create(op, basic('other-*')).expect(200);
      await disable(op, first.connection_id).expect(200);
      const again = await create(op, basic('shared-*')).expect(200);
      expect(again.body.connection.connection_id).not.toBe(first.connection_id);
      // Another workspace may claim the same pattern.
      await create(await t.signIn(), basic('shared-*')).expect(200);
    });

    it('lets exactly one of concurrent creates claim a pattern, and seals only that key', async () => {
      const op = await t.signIn();
      const results = await Promise.all(Array.from({ length: 4 }, () => create(op, basic('race-*'))));
      expect(results.map((r) => r.status).sort()).toEqual([200, 409, 409, 409]);
      expect(await rows(op.workspaceId)).toHaveLength(1);
      expect(gw.callsTo(SEAL)).toHaveLength(1);
    });

    it('answers 502 upstream_error when the gateway cannot seal; the connection stays pending without a credential', async () => {
      const op = await t.signIn();
      gw.fail(SEAL, 500);
      const res = await create(op, basic()).expect(502);
      expect(res.body).toEqual({ error: { code: 'upstream_error', message: 'gateway call failed' } });
      const [row] = await rows(op.workspaceId);
      expect(row).toMatchObject({ status: 'pending', credential_envelope: null, last4: null, credential_revision: 0 });
      expect((await published(op.workspaceId)).models).toEqual([]);
      expect((await audits(op.workspaceId)).map((a: { action: string }) => a.action)).toEqual(['model_connection.start']);
    });
  });

  describe('list', () => {
    it('answers the workspace\'s model connections in creation order, every status, never a key or envelope; tool lists exclude them', async () => {
      const op = await t.signIn();
      const a = (await create(op, basic('a-*')).expect(200)).body.connection;
      const b = (await create(op, basic('b-*')).expect(200)).body.connection;
      const disabled = (await disable(op, a.connection_id).expect(200)).body;
      await create(await t.signIn(), basic('elsewhere')).expect(200);
      const res = await list(op).expect(200);
      const v = await versions(op.workspaceId);
      const publication = { state: 'published', requested_version: v.snapshot_version, published_version: v.published_version };
      expect(res.body).toEqual({ connections: [{ ...disabled, publication }, { ...b, publication }] });
      expect(JSON.stringify(res.body)).not.toContain('gwenv1.');

      expect((await t.http().get(`/api/v1/workspaces/${op.workspaceId}/connections`).set(bearer(op)).expect(200)).body.connections).toEqual([]);
      expect((await t.http().get(`/api/v1/workspaces/${op.workspaceId}/overview`).set(bearer(op)).expect(200)).body.connectors).toEqual({ total: 0, connections_active: 0 });
    });
  });

  describe('disable', () => {
    it('disables, audits, drops the model from the next snapshot and keeps the ciphertext', async () => {
      const op = await t.signIn();
      const c = (await create(op, basic()).expect(200)).body.connection;
      const before = await versions(op.workspaceId);
      const res = await disable(op, c.connection_id).expect(200);
      expect(res.body).toEqual({
        ...c,
        status: 'disabled',
        publication: { state: 'published', requested_version: before.snapshot_version + 1, published_version: before.snapshot_version + 1 },
      });
      const [row] = await rows(op.workspaceId);
      expect(gw.unseal(row.credential_envelope)).toEqual({ kind: 'model_api_key', secret: KEY });
      expect((await published(op.workspaceId)).models).toEqual([]);
      expect((await audits(op.workspaceId)).slice(-1)).toEqual([
        {
          action: 'model_connection.disable',
          target: c.connection_id,
          detail: { connection_id: c.connection_id, provider_id: 'provider_a', model_pattern: 'gpt-4o*', status: 'disabled', last4: 'WXYZ' },
        },
      ]);
    });

    it('is idempotent: disabling again answers the same projection with no audit row and no republish', async () => {
      const op = await t.signIn();
      const c = (await create(op, basic()).expect(200)).body.connection;
      const first = (await disable(op, c.connection_id).expect(200)).body;
      const before = await versions(op.workspaceId);
      const auditCount = (await audits(op.workspaceId)).length;
      expect((await disable(op, c.connection_id).expect(200)).body).toEqual(first);
      expect(await versions(op.workspaceId)).toEqual(before);
      expect(await audits(op.workspaceId)).toHaveLength(auditCount);
    });

    it('answers 404 connection not found for an unknown id, another workspace\'s connection or a tool connection', async () => {
      const op = await t.signIn();
      const other = await t.signIn();
      const theirs = (await create(other, basic()).expect(200)).body.connection;
      const tool = (await t.http().post(`/api/v1/workspaces/${op.workspaceId}/connections`).set(bearer(op)).send({ slug: 'stripe', source: 'native' }).expect(200)).body.connection;
      for (const id of ['conn_000000000000000000000000', theirs.connection_id, tool.connection_id]) {
        expect((await disable(op, id).expect(404)).body).toEqual({ detail: 'connection not found' });
      }
      expect((await rows(other.workspaceId))[0].status).toBe('active');
    });
  });

  describe('authorization', () => {
    it('POST create needs connection.manage (admin); nothing is written or sealed on refusal', async () => {
      await expectAccessMatrix(t, owner, await roleMembers(t, owner), { method: 'post', path, body: basic('matrix'), minRole: 'admin', read: false });
      expect(await rows(owner.workspaceId)).toEqual([]);
      expect(gw.callsTo(SEAL)).toEqual([]);
    });
    it('GET list: any member; frozen still reads', async () => {
      await expectAccessMatrix(t, owner, await roleMembers(t, owner), { method: 'get', path, minRole: 'viewer', read: true });
    });
    it('POST disable needs connection.manage (admin)', async () => {
      const c = (await create(owner, basic('to-disable')).expect(200)).body.connection;
      await expectAccessMatrix(t, owner, await roleMembers(t, owner), { method: 'post', path: (ws) => `${path(ws)}/${c.connection_id}/disable`, minRole: 'admin', read: false });
      expect((await rows(owner.workspaceId)).find((r: { id: string }) => r.id === c.connection_id).status).toBe('active');
    });
  });
});

describe('model providers while the first publication does not settle', () => {
  let proxy: TcpProxy;
  let gw: GatewayEmulator;
  let t: TestApp;
  let op: Operator;

  beforeAll(async () => {
    proxy = await TcpProxy.start(REDIS_URL);
    gw = await GatewayEmulator.start();
    t = await startTestApp({ REDIS_URL: proxy.url, GATEWAY_URL: gw.url });
    op = await t.signIn();
  });
  afterAll(async () => {
    await t.close();
    await proxy.stop();
    await gw.stop();
  });

  it('returns the pending projection and never sends the key; nothing routable is published', async () => {
    await proxy.stop();
    const res = await t.http().post(`/api/v1/workspaces/${op.workspaceId}/model-providers`).set(bearer(op)).send({ provider: 'provider_a', api_key: KEY, model_pattern: 'gpt-*', upstream_model: 'gpt-4o' }).expect(200);
    const [v] = await t.db.query(`SELECT snapshot_version, published_version FROM workspaces WHERE id = $1`, [op.workspaceId]);
    expect(res.body.connection).toMatchObject({ status: 'pending', last4: null, credential_revision: 0, publication: { state: 'pending', requested_version: v.snapshot_version, published_version: v.published_version } });
    expect(gw.callsTo(SEAL)).toEqual([]);
    const [row] = await t.db.query(`SELECT status, credential_envelope FROM connections WHERE workspace_id = $1 AND kind = 'model'`, [op.workspaceId]);
    expect(row).toEqual({ status: 'pending', credential_envelope: null });

    await proxy.start();
    const snapshot = (await t.http().get(`/internal/v1/workspaces/${op.workspaceId}/snapshot`).set('Authorization', `Bearer ${await signServiceToken(SERVICE_SECRET, 'gateway', 'control')}`).expect(200)).body;
    expect(snapshot.models).toEqual([]);
  });
});
