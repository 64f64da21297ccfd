import { createClient, RedisClientType } from 'redis';
import { createHash } from 'node:crypto';
import { signServiceToken } from 'src/platform/auth/service-token';
import { bearer, Operator, SERVICE_SECRET, startTestApp, TestApp } from 'test/support/app';
import { REDIS_URL } from 'test/support/database';
import { expireKey, freezeWorkspace } from 'test/support/factories';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('virtual keys', () => {
  let t: TestApp;
  let redis: RedisClientType;
  let owner: Operator;
  let prodWs: string;

  beforeAll(async () => {
    t = await startTestApp();
    redis = createClient({ url: REDIS_URL });
    await redis.connect();
    owner = await t.signIn();
    const res = await t.http().post('/api/v1/workspaces').set(bearer(owner)).send({ org_id: owner.orgId, slug: 'production', env: 'prod' }).expect(201);
    prodWs = res.body.id;
  });
  afterAll(async () => {
    redis.destroy();
    await t.close();
  });

  const keysPath = (ws: string) => `/api/v1/workspaces/${ws}/keys`;
  const mint = (op: Operator, body: Record<string, unknown> = { agent_id: 'agent-1' }, ws = op.workspaceId) =>
    t.http().post(keysPath(ws)).set(bearer(op)).send(body);
  const list = (op: Operator, ws = op.workspaceId) => t.http().get(keysPath(ws)).set(bearer(op));
  const revoke = (op: Operator, keyId: string, ws = op.workspaceId) => t.http().post(`${keysPath(ws)}/${keyId}/revoke`).set(bearer(op));
  const hotKey = (plaintext: string) => `${t.config.redisPrefix}:key:${sha256(plaintext)}`;
  const count = async (sql: string, params: unknown[]) => Number((await t.db.query(sql, params))[0].n);
  const keyRows = (ws: string) => count(`SELECT count(*) AS n FROM virtual_keys WHERE workspace_id = $1`, [ws]);
  const auditRows = (ws: string, action: string) => count(`SELECT count(*) AS n FROM audit_events WHERE workspace_id = $1 AND action = $2`, [ws, action]);
  const internalKey = async (hash: string, status = 200) =>
    t.http().get(`/internal/v1/keys/${hash}`).set('Authorization', `Bearer ${await signServiceToken(SERVICE_SECRET, 'gateway', 'control')}`).expect(status);

  describe('mint', () => {
    it('answers 201 with the key, its defaults and the plaintext, storing only sha256 and last4', async () => {
      const res = await mint(owner).expect(201);
      expect(res.body).toEqual({
        key_id: expect.stringMatching(/^key_[0-9a-f]{24}$/),
        prefix: 'ob_test',
        status: 'active',
        agent_id: 'agent-1',
        last4: res.body.plaintext.slice(-4),
        allowed_models: ['*'],
        allowed_tools: ['*'],
        tools_mode: 'full',
        budget_micros_usd_month: null,
        rpm: null,
        tpm: null,
        scopes: ['mcp', 'llm'],
        expires_at: null,
        attributes: {},
        created_at: expect.stringMatching(RFC3339),
        revoked_at: null,
        rotated_at: null,
        previous: null,
        last_used_at: null,
        idle: false,
        plaintext: expect.stringMatching(/^ob_test_[A-Za-z0-9_-]{43}$/),
      });
      const [row] = await t.db.query(`SELECT * FROM virtual_keys WHERE id = $1`, [res.body.key_id]);
      expect(row.key_hash).toBe(sha256(res.body.plaintext));
      expect(row.last4).toBe(res.body.plaintext.slice(-4));
      expect(JSON.stringify(row)).not.toContain(res.body.plaintext);
      expect(JSON.stringify(row)).not.toContain(res.body.plaintext.slice(8));
    });

    it('draws at least 32 random bytes per secret: every secret differs', async () => {
      const secrets = new Set<string>();
      for (let i = 0; i < 5; i++) secrets.add((await mint(owner).expect(201)).body.plaintext);
      expect(secrets.size).toBe(5);
      for (const s of secrets) expect(Buffer.from(s.slice('ob_test_'.length), 'base64url').length).toBeGreaterThanOrEqual(32);
    });

    it('stores every given field', async () => {
      const body = {
        agent_id: 'agent-full',
        prefix: 'ob_live',
        allowed_models: ['gpt-*', 'claude-3'],
        allowed_tools: ['github.*'],
        tools_mode: 'progressive',
        budget_micros_usd_month: 9007199254740991,
        rpm: 0,
        tpm: 100000,
        scopes: ['mcp'],
        attributes: { team: 'ops', tier: 2, nested: { a: [1, 2] } },
        expires_at: '2099-01-02T03:04:05.678+02:00',
      };
      const res = await mint(owner, body).expect(201);
      expect(res.body).toMatchObject({ ...body, expires_at: '2099-01-02T01:04:05.678Z', status: 'active' });
      expect(res.body.plaintext).toMatch(/^ob_live_/);
      const listed = (await list(owner).expect(200)).body.keys.find((k: { key_id: string }) => k.key_id === res.body.key_id);
      expect(listed).toEqual(Object.fromEntries(Object.entries(res.body).filter(([k]) => k !== 'plaintext')));
    });

    it('stores null lists as ["*"], null scopes as ["mcp","llm"] and null attributes as {}', async () => {
      const res = await mint(owner, { agent_id: 'a', allowed_models: null, allowed_tools: null, scopes: null, attributes: null, tools_mode: null, prefix: null }).expect(201);
      expect(res.body).toMatchObject({ allowed_models: ['*'], allowed_tools: ['*'], scopes: ['mcp', 'llm'], attributes: {}, tools_mode: 'full', prefix: 'ob_test' });
    });

    it('defaults the prefix by environment and refuses a test prefix in a prod workspace', async () => {
      const live = await mint(owner, { agent_id: 'p' }, prodWs).expect(201);
      expect(live.body.prefix).toBe('ob_live');
      expect(live.body.plaintext).toMatch(/^ob_live_/);
      const before = await keyRows(prodWs);
      const res = await mint(owner, { agent_id: 'p', prefix: 'ob_test' }, prodWs).expect(400);
      expect(res.body).toEqual({ detail: 'ob_test keys are not allowed in a prod workspace' });
      expect(await keyRows(prodWs)).toBe(before);
    });

    it('answers 400 for a bad prefix or tools_mode and writes nothing', async () => {
      const keys = await keyRows(owner.workspaceId);
      const audits = await auditRows(owner.workspaceId, 'key.mint');
      for (const prefix of ['ob_prod', 'OB_LIVE', '', 7, ['ob_live']]) {
        expect((await mint(owner, { agent_id: 'a', prefix }).expect(400)).body).toEqual({ detail: 'prefix must be ob_live or ob_test' });
      }
      for (const tools_mode of ['lazy', 'FULL', 1]) {
        expect((await mint(owner, { agent_id: 'a', tools_mode }).expect(400)).body).toEqual({ detail: 'tools_mode must be full or progressive' });
      }
      expect(await keyRows(owner.workspaceId)).toBe(keys);
      expect(await auditRows(owner.workspaceId, 'key.mint')).toBe(audits);
    });

    it('answers 422 with {loc, msg, type} entries for body validation failures and writes nothing', async () => {
      const keys = await keyRows(owner.workspaceId);
      const cases: [Record<string, unknown>, (string | number)[], string][] = [
        [{}, ['body', 'agent_id'], 'missing'],
        [{ agent_id: '' }, ['body', 'agent_id'], 'string_too_short'],
        [{ agent_id: 'x'.repeat(129) }, ['body', 'agent_id'], 'string_too_long'],
        [{ agent_id: 5 }, ['body', 'agent_id'], 'string_type'],
        [{ agent_id: 'a', rpm: -1 }, ['body', 'rpm'], 'greater_than_equal'],
        [{ agent_id: 'a', tpm: -5 }, ['body', 'tpm'], 'greater_than_equal'],
        [{ agent_id: 'a', rpm: 1.5 }, ['body', 'rpm'], 'int_type'],
        [{ agent_id: 'a', rpm: '10' }, ['body', 'rpm'], 'int_type'],
        [{ agent_id: 'a', budget_micros_usd_month: 'lots' }, ['body', 'budget_micros_usd_month'], 'int_type'],
        [{ agent_id: 'a', allowed_models: 'gpt-4' }, ['body', 'allowed_models'], 'list_type'],
        [{ agent_id: 'a', scopes: ['admin'] }, ['body', 'scopes'], 'enum'],
        [{ agent_id: 'a', attributes: [1] }, ['body', 'attributes'], 'dict_type'],
        [{ agent_id: 'a', expires_at: 'tomorrow' }, ['body', 'expires_at'], 'value_error'],
        [{ agent_id: 'a', plaintext: 'ob_test_mine' }, ['body', 'plaintext'], 'extra_forbidden'],
      ];
      for (const [body, loc, type] of cases) {
        const res = await mint(owner, body).expect(422);
        expect(res.body.detail).toEqual(expect.arrayContaining([expect.objectContaining({ loc, type, msg: expect.any(String) })]));
      }
      expect(await keyRows(owner.workspaceId)).toBe(keys);
    });

    it('writes the key.mint audit row in the same transaction, with no secret in its detail', async () => {
      const res = await mint(owner, { agent_id: 'audited', tools_mode: 'progressive', scopes: ['llm'] }).expect(201);
      const rows = await t.db.query(`SELECT actor_user_id, target, detail FROM audit_events WHERE action = 'key.mint' AND target = $1`, [res.body.key_id]);
      expect(rows).toEqual([
        {
          actor_user_id: owner.userId,
          target: res.body.key_id,
          detail: { agent_id: 'audited', prefix: 'ob_test', last4: res.body.last4, tools_mode: 'progressive', scopes: ['llm'] },
        },
      ]);
    });

    it('puts the key context on the hot path after commit, identical to the internal read', async () => {
      const res = await mint(owner, { agent_id: 'hot', rpm: 60 }).expect(201);
      const stored = await redis.get(hotKey(res.body.plaintext));
      expect(stored).not.toBeNull();
      const context = JSON.parse(stored!);
      expect(context).toEqual({
        schema_version: 1,
        key_id: res.body.key_id,
        workspace_id: owner.workspaceId,
        env: 'dev',
        agent_id: 'hot',
        prefix: 'ob_test',
        status: 'active',
        allowed_models: ['*'],
        allowed_tools: ['*'],
        tools_mode: 'full',
        budget_micros_usd_month: null,
        rpm: 60,
        tpm: null,
        scopes: ['mcp', 'llm'],
        attributes: {},
        expires_at: null,
        revoked_at: null,
        valid_until: null,
      });
      expect((await internalKey(sha256(res.body.plaintext))).body).toEqual(context);
      expect(await redis.pTTL(hotKey(res.body.plaintext))).toBe(-1);
      const [row] = await t.db.query(`SELECT hot_path_pending FROM virtual_keys WHERE id = $1`, [res.body.key_id]);
      expect(row.hot_path_pending).toBe(false);
    });

    it('lets the hot-path entry of an expiring key expire with it', async () => {
      const res = await mint(owner, { agent_id: 'exp', expires_at: new Date(Date.now() + 3600_000).toISOString() }).expect(201);
      const ttl = await redis.pTTL(hotKey(res.body.plaintext));
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(3600_000);
    });

    it('reports a key minted with a past expiry as expired and keeps it off the hot path', async () => {
      const res = await mint(owner, { agent_id: 'old', expires_at: '2020-01-01T00:00:00Z' }).expect(201);
      expect(res.body).toMatchObject({ status: 'expired', expires_at: '2020-01-01T00:00:00.000Z' });
      expect(await redis.exists(hotKey(res.body.plaintext))).toBe(0);
      expect((await internalKey(sha256(res.body.plaintext))).body.status).toBe('expired');
    });
  });

  describe('list', () => {
    it('lists revoked and expired keys too, oldest first, without plaintext or digest', async () => {
      const viewer = await t.signIn();
      const a = await mint(viewer, { agent_id: 'a' }).expect(201);
      const b = await mint(viewer, { agent_id: 'b', expires_at: '2020-01-01T00:00:00Z' }).expect(201);
      const c = await mint(viewer, { agent_id: 'c' }).expect(201);
      await revoke(viewer, c.body.key_id).expect(200);
      const res = await list(viewer).expect(200);
      expect(res.body.keys.map((k: { key_id: string; status: string }) => [k.key_id, k.status])).toEqual([
        [a.body.key_id, 'active'],
        [b.body.key_id, 'expired'],
        [c.body.key_id, 'revoked'],
      ]);
      const text = JSON.stringify(res.body);
      for (const m of [a, b, c]) {
        expect(text).not.toContain(m.body.plaintext);
        expect(text).not.toContain(sha256(m.body.plaintext));
      }
      for (const k of res.body.keys) expect(Object.keys(k)).not.toContain('plaintext');
      expect(res.headers['cache-control']).toBe('no-store');
    });

    it('answers an empty list for a workspace without keys', async () => {
      const fresh = await t.signIn();
      expect((await list(fresh).expect(200)).body).toEqual({ keys: [] });
    });
  });

  describe('revoke', () => {
    it('revokes, drops the hot-path entry, and repeats idempotently with revoked_at unchanged', async () => {
      const minted = await mint(owner, { agent_id: 'rev' }).expect(201);
      expect(await redis.exists(hotKey(minted.body.plaintext))).toBe(1);
      const first = await revoke(owner, minted.body.key_id).expect(200);
      expect(first.body).toMatchObject({ key_id: minted.body.key_id, status: 'revoked', revoked_at: expect.stringMatching(RFC3339) });
      expect(first.body).not.toHaveProperty('plaintext');
      expect(await redis.exists(hotKey(minted.body.plaintext))).toBe(0);
      const again = await revoke(owner, minted.body.key_id).expect(200);
      expect(again.body).toEqual(first.body);
      const audits = await t.db.query(`SELECT detail FROM audit_events WHERE action = 'key.revoke' AND target = $1`, [minted.body.key_id]);
      expect(audits).toEqual([{ detail: { agent_id: 'rev', prefix: 'ob_test', last4: minted.body.last4 } }]);
      expect((await internalKey(sha256(minted.body.plaintext))).body).toMatchObject({ status: 'revoked', revoked_at: first.body.revoked_at });
    });

    it('reports a revoked key past its expiry as revoked (revoked wins over expired)', async () => {
      const minted = await mint(owner, { agent_id: 'both', expires_at: '2021-06-01T00:00:00Z' }).expect(201);
      expect((await revoke(owner, minted.body.key_id).expect(200)).body.status).toBe('revoked');
      const listed = (await list(owner).expect(200)).body.keys.find((k: { key_id: string }) => k.key_id === minted.body.key_id);
      expect(listed.status).toBe('revoked');
    });

    it('answers 404 key not found for an unknown key or one of another workspace, and changes nothing', async () => {
      const other = await t.signIn();
      const theirs = await mint(other, { agent_id: 'theirs' }).expect(201);
      expect((await revoke(owner, 'key_000000000000000000000000').expect(404)).body).toEqual({ detail: 'key not found' });
      expect((await revoke(owner, theirs.body.key_id).expect(404)).body).toEqual({ detail: 'key not found' });
      const [row] = await t.db.query(`SELECT revoked_at FROM virtual_keys WHERE id = $1`, [theirs.body.key_id]);
      expect(row.revoked_at).toBeNull();
      expect(await redis.exists(hotKey(theirs.body.plaintext))).toBe(1);
    });

    it('serializes concurrent revokes: one revoked_at, one audit row', async () => {
      const minted = await mint(owner, { agent_id: 'race' }).expect(201);
      const results = await Promise.all(Array.from({ length: 6 }, () => revoke(owner, minted.body.key_id)));
      expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
      expect(new Set(results.map((r) => r.body.revoked_at)).size).toBe(1);
      expect(await count(`SELECT count(*) AS n FROM audit_events WHERE action = 'key.revoke' AND target = $1`, [minted.body.key_id])).toBe(1);
      expect(await redis.exists(hotKey(minted.body.plaintext))).toBe(0);
    });

    it('keeps the hot path consistent when mints and revokes race', async () => {
      const minted = await Promise.all(Array.from({ length: 5 }, (_, i) => mint(owner, { agent_id: `m${i}` }).expect(201)));
      await Promise.all(minted.map((m) => revoke(owner, m.body.key_id).expect(200)));
      for (const m of minted) expect(await redis.exists(hotKey(m.body.plaintext))).toBe(0);
      expect(new Set(minted.map((m) => m.body.key_id)).size).toBe(5);
    });
  });

  describe('tenant isolation', () => {
    it('never shows the keys of one workspace in another', async () => {
      const a = await t.signIn();
      const b = await t.signIn();
      const keyA = await mint(a, { agent_id: 'only-a' }).expect(201);
      const listB = await list(b).expect(200);
      expect(JSON.stringify(listB.body)).not.toContain(keyA.body.key_id);
      // b cannot reach a's workspace at all
      expect((await list(b, a.workspaceId).expect(404)).body).toEqual({ detail: 'workspace not found' });
    });
  });

  describe('overview keys block', () => {
    it('counts total keys and the ones active now (expiry and revocation accounted)', async () => {
      const op = await t.signIn();
      const overview = async () => (await t.http().get(`/api/v1/workspaces/${op.workspaceId}/overview`).set(bearer(op)).expect(200)).body.keys;
      expect(await overview()).toEqual({ active: 0, total: 0 });
      await mint(op, { agent_id: 'a' }).expect(201);
      const b = await mint(op, { agent_id: 'b' }).expect(201);
      await mint(op, { agent_id: 'c', expires_at: '2020-01-01T00:00:00Z' }).expect(201);
      const d = await mint(op, { agent_id: 'd', expires_at: new Date(Date.now() + 3600_000).toISOString() }).expect(201);
      await revoke(op, b.body.key_id).expect(200);
      expect(await overview()).toEqual({ active: 2, total: 4 });
      await expireKey(t, d.body.key_id);
      expect(await overview()).toEqual({ active: 1, total: 4 });
    });
  });

  describe('authorization', () => {
    let ws: Operator;
    let keyId: string;
    beforeAll(async () => {
      ws = await t.signIn();
      keyId = (await mint(ws, { agent_id: 'authz' }).expect(201)).body.key_id;
    });

    const routes = () => [
      { name: 'mint', call: (h: Record<string, string>, w: string) => t.http().post(keysPath(w)).set(h).send({ agent_id: 'x' }), write: true },
      { name: 'list', call: (h: Record<string, string>, w: string) => t.http().get(keysPath(w)).set(h), write: false },
      { name: 'revoke', call: (h: Record<string, string>, w: string) => t.http().post(`${keysPath(w)}/${keyId}/revoke`).set(h), write: true },
    ];

    it('answers 401 session required without a session and 401 session not accepted for a virtual key', async () => {
      const { plaintext } = (await mint(ws, { agent_id: 'as-bearer' }).expect(201)).body;
      for (const r of routes()) {
        expect((await r.call({}, ws.workspaceId).expect(401)).body).toEqual({ detail: 'session required' });
        expect((await r.call({ Authorization: `Bearer ${plaintext}` }, ws.workspaceId).expect(401)).body).toEqual({ detail: 'session not accepted' });
      }
    });

    it('answers a non-member 404 exactly as for a nonexistent workspace', async () => {
      const stranger = await t.signIn();
      for (const r of routes()) {
        const missing = await r.call(bearer(stranger), 'ws_000000000000000000000000').expect(404);
        const foreign = await r.call(bearer(stranger), ws.workspaceId).expect(404);
        expect(foreign.body).toEqual(missing.body);
        expect(foreign.body).toEqual({ detail: 'workspace not found' });
      }
    });

    it('lets a viewer list but not mint or revoke (403), a developer do all', async () => {
      const viewer = await t.member(ws, 'viewer');
      const developer = await t.member(ws, 'developer');
      const before = await keyRows(ws.workspaceId);
      for (const r of routes()) {
        if (r.write) expect((await r.call(bearer(viewer), ws.workspaceId).expect(403)).body).toEqual({ detail: 'action not permitted' });
        else await r.call(bearer(viewer), ws.workspaceId).expect(200);
      }
      expect(await keyRows(ws.workspaceId)).toBe(before);
      await routes()[0].call(bearer(developer), ws.workspaceId).expect(201);
      await routes()[2].call(bearer(developer), ws.workspaceId).expect(200);
    });

    it('answers 409 workspace is frozen for mint and revoke, and still lists', async () => {
      const frozen = await t.signIn();
      const k = await mint(frozen, { agent_id: 'f' }).expect(201);
      await freezeWorkspace(t, frozen.workspaceId);
      expect((await mint(frozen).expect(409)).body).toEqual({ detail: 'workspace is frozen' });
      expect((await revoke(frozen, k.body.key_id).expect(409)).body).toEqual({ detail: 'workspace is frozen' });
      expect((await list(frozen).expect(200)).body.keys).toHaveLength(1);
      const [row] = await t.db.query(`SELECT revoked_at FROM virtual_keys WHERE id = $1`, [k.body.key_id]);
      expect(row.revoked_at).toBeNull();
    });
  });
});
