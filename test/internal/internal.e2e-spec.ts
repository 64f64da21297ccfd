import { createClient, RedisClientType } from 'redis';
import { SignJWT } from 'jose';
import { createHash, createPublicKey, randomUUID, verify } from 'node:crypto';
import canonicalize from 'canonicalize';
import { canonicalJson } from 'src/common/crypto/crypto';
import { verifySnapshot } from 'src/modules/publication/snapshot-integrity';
import { signServiceToken } from 'src/platform/auth/service-token';
import { SNAPSHOT_PARTS } from 'src/modules/publication/snapshot.registry';
import { bearer, Operator, SERVICE_SECRET, startTestApp, TestApp } from 'test/support/app';
import { REDIS_URL } from 'test/support/database';
import { eventually } from 'test/support/eventually';
import { corruptRouteQualifiers, deleteWorkspaceUnderneath, stageSnapshotVersion } from 'test/support/factories';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const now = () => Math.floor(Date.now() / 1000);
const secretBytes = new TextEncoder().encode(SERVICE_SECRET);

interface TokenSpec {
  alg?: string;
  iss?: string | null;
  aud?: string | string[] | null;
  iat?: number | null;
  exp?: number | null;
  jti?: string | null;
  secret?: Uint8Array;
}

/** A hand-built HS* token so each claim can be wrong or missing on purpose. */
function token(spec: TokenSpec = {}): Promise<string> {
  const t = now();
  const claims: Record<string, unknown> = {};
  const put = (name: string, value: unknown, fallback: unknown) => {
    const v = value === undefined ? fallback : value;
    if (v !== null) claims[name] = v;
  };
  put('iss', spec.iss, 'gateway');
  put('aud', spec.aud, 'control');
  put('iat', spec.iat, t);
  put('exp', spec.exp, t + 60);
  put('jti', spec.jti, randomUUID());
  return new SignJWT(claims).setProtectedHeader({ alg: spec.alg ?? 'HS256', typ: 'JWT' }).sign(spec.secret ?? secretBytes);
}

describe('gateway-facing routes', () => {
  let t: TestApp;
  let redis: RedisClientType;
  let owner: Operator;
  let plaintext: string;
  let keyId: string;

  beforeAll(async () => {
    t = await startTestApp();
    redis = createClient({ url: REDIS_URL });
    await redis.connect();
    owner = await t.signIn();
    const res = await t.http().post(`/api/v1/workspaces/${owner.workspaceId}/keys`).set(bearer(owner)).send({ agent_id: 'gw-agent', rpm: 10 }).expect(201);
    plaintext = res.body.plaintext;
    keyId = res.body.key_id;
  });
  afterAll(async () => {
    redis.destroy();
    await t.close();
  });

  const keyPath = () => `/internal/v1/keys/${sha256(plaintext)}`;
  const snapshotPath = () => `/internal/v1/workspaces/${owner.workspaceId}/snapshot`;
  const get = (path: string, authorization?: string) => {
    const req = t.http().get(path);
    return authorization === undefined ? req : req.set('Authorization', authorization);
  };

  describe('service JWT', () => {
    const refused = async (authorization: string | undefined) => {
      for (const path of [keyPath(), snapshotPath()]) {
        const res = await get(path, authorization).expect(401);
        expect(res.body).toEqual({ detail: 'service token not accepted' });
      }
    };

    it('accepts an HS256 gateway-to-control token living at most 300 s', async () => {
      await get(keyPath(), `Bearer ${await signServiceToken(SERVICE_SECRET, 'gateway', 'control')}`).expect(200);
      await get(snapshotPath(), `Bearer ${await token({ exp: now() + 300 })}`).expect(200);
      await get(keyPath(), `bearer ${await token({ aud: ['control'] })}`).expect(200);
    });

    it('refuses a missing header and other schemes', async () => {
      await refused(undefined);
      await refused(`Basic ${Buffer.from('gateway:x').toString('base64')}`);
      await refused(`Token ${await token()}`);
      await refused('Bearer');
    });

    it('refuses a wrong iss or aud, or a token for the other direction', async () => {
      await refused(`Bearer ${await token({ iss: 'control' })}`);
      await refused(`Bearer ${await token({ iss: 'dashboard' })}`);
      await refused(`Bearer ${await token({ aud: 'gateway' })}`);
      await refused(`Bearer ${await token({ aud: 'gateway-seal' })}`);
      await refused(`Bearer ${await token({ aud: ['control', 'gateway'] })}`);
      await refused(`Bearer ${await signServiceToken(SERVICE_SECRET, 'control', 'gateway')}`);
    });

    it('refuses any algorithm but HS256, alg none and another secret', async () => {
      await refused(`Bearer ${await token({ alg: 'HS384' })}`);
      await refused(`Bearer ${await token({ alg: 'HS512' })}`);
      await refused(`Bearer ${await token({ secret: new TextEncoder().encode('another-secret-0123456789abcdef-xyz') })}`);
      const enc = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
      await refused(`Bearer ${enc({ alg: 'none', typ: 'JWT' })}.${enc({ iss: 'gateway', aud: 'control', iat: now(), exp: now() + 60, jti: 'x' })}.`);
    });

    it('refuses a lifetime over 300 s, an expired token and an iat in the future', async () => {
      await refused(`Bearer ${await token({ exp: now() + 301 })}`);
      await refused(`Bearer ${await token({ iat: now() - 10, exp: now() + 3600 })}`);
      await refused(`Bearer ${await token({ iat: now() - 120, exp: now() - 60 })}`);
      await refused(`Bearer ${await token({ iat: now() + 3600, exp: now() + 3700 })}`);
      await refused(`Bearer ${await token({ iat: now(), exp: now() })}`);
    });

    it('refuses a token without jti, iat, exp, iss or aud', async () => {
      for (const missing of ['jti', 'iat', 'exp', 'iss', 'aud'] as const) {
        await refused(`Bearer ${await token({ [missing]: null })}`);
      }
      await refused(`Bearer ${await token({ jti: '' })}`);
    });

    it('stops accepting a token it has already accepted once that token expires', async () => {
      const shortLived = `Bearer ${await token({ exp: now() + 2 })}`;
      await get(keyPath(), shortLived).expect(200);
      await eventually(async () => expect((await get(keyPath(), shortLived)).status).toBe(401), 50, 200);
    });

    it('never accepts an operator session token or a virtual key', async () => {
      await refused(`Bearer ${owner.token}`);
      await refused(`Bearer ${plaintext}`);
    });
  });

  describe('GET /internal/v1/keys/{key_hash}', () => {
    const read = async (hash: string, status: number) => get(`/internal/v1/keys/${hash}`, `Bearer ${await token()}`).expect(status);

    it('answers the key context, the same document the hot path holds', async () => {
      const res = await read(sha256(plaintext), 200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.body).toMatchObject({ schema_version: 1, key_id: keyId, workspace_id: owner.workspaceId, env: 'dev', agent_id: 'gw-agent', status: 'active', rpm: 10 });
      expect(JSON.parse((await redis.get(`${t.config.redisPrefix}:key:${sha256(plaintext)}`))!)).toEqual(res.body);
      expect(JSON.stringify(res.body)).not.toContain(plaintext);
      expect(JSON.stringify(res.body)).not.toContain(sha256(plaintext));
    });

    it('answers the same document from PostgreSQL when the hot path does not hold the key', async () => {
      const cached = (await read(sha256(plaintext), 200)).body;
      await redis.del(`${t.config.redisPrefix}:key:${sha256(plaintext)}`);
      expect((await read(sha256(plaintext), 200)).body).toEqual(cached);
    });

    it('answers 400 key hash must be sha256 hex for anything but 64 lowercase hex', async () => {
      for (const hash of [sha256(plaintext).toUpperCase(), sha256(plaintext).slice(1), `${sha256(plaintext)}0`, 'g'.repeat(64), plaintext, 'x']) {
        expect((await read(encodeURIComponent(hash), 400)).body).toEqual({ detail: 'key hash must be sha256 hex' });
      }
    });

    it('answers 404 for an unknown digest', async () => {
      expect((await read(sha256('ob_test_unknown'), 404)).body).toEqual({ detail: 'key not found' });
    });

    it('answers 404 when the key workspace is missing', async () => {
      const other = await t.signIn();
      const minted = await t.http().post(`/api/v1/workspaces/${other.workspaceId}/keys`).set(bearer(other)).send({ agent_id: 'orphan' }).expect(201);
      // No route deletes a workspace; remove it underneath (foreign keys off for this session only).
      await deleteWorkspaceUnderneath(t, other.workspaceId);
      await redis.del(`${t.config.redisPrefix}:key:${sha256(minted.body.plaintext)}`);
      await read(sha256(minted.body.plaintext), 404);
    });
  });

  describe('GET /internal/v1/workspaces/{workspace_id}/snapshot', () => {
    const read = async (ws: string, status: number, headers: Record<string, string> = {}) =>
      get(`/internal/v1/workspaces/${ws}/snapshot`, `Bearer ${await token()}`).set(headers).expect(status);
    const held = async (ws = owner.workspaceId) => JSON.parse((await redis.get(`${t.config.redisPrefix}:snapshot:${ws}`))!);
    const jwks = async () => (await t.http().get('/.well-known/control-signing-keys.json').expect(200)).body;

    it('answers the signed snapshot the hot path holds (CONTRACT.md 4.5)', async () => {
      const res = await read(owner.workspaceId, 200);
      expect(Object.keys(res.body).sort()).toEqual(['schema_version', 'workspace_id', 'env', 'version', 'generated_at', 'integrity', ...Object.keys(SNAPSHOT_PARTS)].sort());
      expect(res.body).toMatchObject({ schema_version: 1, workspace_id: owner.workspaceId, env: 'dev', version: 1 });
      expect(res.body.generated_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      // The very document of the hot path, integrity included.
      expect(res.body).toEqual(await held());
    });

    it('carries a digest over its canonical JSON and a detached EdDSA signature that the public JWKS verifies', async () => {
      const res = await read(owner.workspaceId, 200);
      const { integrity, ...content } = res.body;
      expect(integrity.digest).toBe(`sha256:${sha256(canonicalJson(content))}`);
      const keys = await jwks();
      expect(integrity.kid).toBe(keys.keys[0].kid);
      const [header, payload, signature] = integrity.signature.split('.');
      expect(payload).toBe('');
      expect(JSON.parse(Buffer.from(header, 'base64url').toString())).toEqual({ alg: 'EdDSA', kid: integrity.kid });
      const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: keys.keys[0].x }, format: 'jwk' });
      const input = `${header}.${Buffer.from(integrity.digest).toString('base64url')}`;
      expect(verify(null, Buffer.from(input), key, Buffer.from(signature, 'base64url'))).toBe(true);
      expect(verifySnapshot(res.body, keys)).toEqual({ ok: true, digest: integrity.digest, kid: integrity.kid });
      expect(verifySnapshot({ ...res.body, env: 'prod' }, keys)).toMatchObject({ ok: false });
    });

    it('answers ETag "<digest>" and 304 without a body to a matching If-None-Match', async () => {
      const res = await read(owner.workspaceId, 200);
      const etag = `"${res.body.integrity.digest}"`;
      expect(res.headers.etag).toBe(etag);
      for (const header of [etag, `W/${etag}`, `"sha256:${'0'.repeat(64)}", ${etag}`, '*']) {
        const cached = await read(owner.workspaceId, 304, { 'If-None-Match': header });
        expect(cached.headers.etag).toBe(etag);
        expect(cached.text ?? '').toBe('');
      }
      const other = await read(owner.workspaceId, 200, { 'If-None-Match': `"sha256:${'0'.repeat(64)}"` });
      expect(other.body).toEqual(res.body);
    });

    it('builds nothing while the hot path holds the current version: a part that cannot be built does not matter', async () => {
      const other = await t.signIn();
      const ws = other.workspaceId;
      await t.http().post(`/api/v1/workspaces/${ws}/route-qualifiers`).set(bearer(other)).send({ qualifier_id: 'broken', constraint: { kind: 'pin', target: 'a' } }).expect(200);
      const before = await read(ws, 200);
      // Unbuildable from now on (two active constraints), but the hot path holds the current version.
      await corruptRouteQualifiers(t, ws, ['b']);
      await redis.set(`${t.config.redisPrefix}:snapshot:${ws}`, JSON.stringify({ ...before.body, generated_at: '2000-01-01T00:00:00.000Z' }));
      // Served as the hot path holds it (a built one would be another generated_at, or a 503).
      expect((await read(ws, 200)).body.generated_at).toBe('2000-01-01T00:00:00.000Z');
      await read(ws, 304, { 'If-None-Match': `"${before.body.integrity.digest}"` });
    });

    it('serves the kept document of the current version when the hot path lacks it, the same digest as published', async () => {
      const ws = (await t.signIn()).workspaceId;
      const published = await held(ws);
      await redis.del(`${t.config.redisPrefix}:snapshot:${ws}`);
      expect((await read(ws, 200)).body).toEqual(published);
    });

    it('serves a version byte-identical from the hot path and from PostgreSQL, as RFC 8785 canonical JSON, numeric model names included', async () => {
      const op = await t.signIn();
      const ws = op.workspaceId;
      const price = { input_micros_usd_per_mtok: 1, output_micros_usd_per_mtok: 2, cached_micros_usd_per_mtok: 0, reasoning_micros_usd_per_mtok: 2 };
      await t.http().put(`/api/v1/workspaces/${ws}/pricing`).set(bearer(op)).send({ prices: ['10', '9', 'a'].map((model) => ({ model, ...price })) }).expect(200);
      const fromRedis = await read(ws, 200);
      expect(fromRedis.text).toBe((await redis.get(`${t.config.redisPrefix}:snapshot:${ws}`))!);
      await redis.del(`${t.config.redisPrefix}:snapshot:${ws}`);
      const fromPostgres = await read(ws, 200);
      expect(fromPostgres.text).toBe(fromRedis.text);
      expect(fromPostgres.headers.etag).toBe(fromRedis.headers.etag);
      // An independent RFC 8785 implementation agrees on the bytes and on the digest.
      expect(fromRedis.text).toBe(canonicalize(JSON.parse(fromRedis.text)));
      expect(fromRedis.text).toContain('"models":{"10":');
      const { integrity, ...content } = JSON.parse(fromRedis.text);
      expect(integrity.digest).toBe(`sha256:${sha256(canonicalize(content)!)}`);
    });

    it('builds a newly staged version at once, and keeps that document for the version', async () => {
      const before = (await read(owner.workspaceId, 200)).body.version;
      await stageSnapshotVersion(t, owner.workspaceId);
      const first = (await read(owner.workspaceId, 200)).body;
      expect(first.version).toBe(before + 1);
      expect((await read(owner.workspaceId, 200)).body).toEqual(first);
    });

    it('answers 404 workspace not found for an unknown workspace', async () => {
      expect((await read('ws_000000000000000000000000', 404)).body).toEqual({ detail: 'workspace not found' });
    });

    it('answers 503 snapshot_unavailable when a part of a version not yet built cannot be built from committed state', async () => {
      // A stored route qualifier with two active constraints cannot be deserialized.
      await t.http().post(`/api/v1/workspaces/${owner.workspaceId}/route-qualifiers`).set(bearer(owner)).send({ qualifier_id: 'broken', constraint: { kind: 'pin', target: 'a' } }).expect(200);
      await corruptRouteQualifiers(t, owner.workspaceId, ['b']);
      await stageSnapshotVersion(t, owner.workspaceId);
      const res = await read(owner.workspaceId, 503);
      expect(res.body).toEqual({ detail: 'snapshot_unavailable' });
      await corruptRouteQualifiers(t, owner.workspaceId, null);
      await read(owner.workspaceId, 200);
    });
  });

  describe('POST /internal/v1/workspaces/{workspace_id}/snapshot/applied', () => {
    let ws: string;
    let digest: string;
    const report = async (body: object, status: number, workspaceId = ws) =>
      t.http().post(`/internal/v1/workspaces/${workspaceId}/snapshot/applied`).set('Authorization', `Bearer ${await token()}`).send(body).expect(status);
    const applied = (over: object = {}) => ({ instance_id: 'gw-1', version: 1, digest, applied_at: '2026-01-01T00:00:00.000Z', ...over });

    beforeAll(async () => {
      ws = (await t.signIn()).workspaceId;
      digest = JSON.parse((await redis.get(`${t.config.redisPrefix}:snapshot:${ws}`))!).integrity.digest;
    });

    it('records what the instance applied and answers it with its state; a repeat answers the same and writes nothing new', async () => {
      const first = await report(applied(), 200);
      expect(first.body).toEqual({ instance_id: 'gw-1', version: 1, digest, applied_at: '2026-01-01T00:00:00.000Z', state: 'current' });
      expect((await report(applied(), 200)).body).toEqual(first.body);
      expect(await t.db.query(`SELECT instance_id, version, digest FROM snapshot_instances WHERE workspace_id = $1`, [ws])).toEqual([{ instance_id: 'gw-1', version: 1, digest }]);
    });

    it('answers 409 for a version above the current one or a digest that is not that version\'s', async () => {
      expect((await report(applied({ version: 2 }), 409)).body).toEqual({ detail: 'version 2 is above the current version 1' });
      expect((await report(applied({ digest: `sha256:${'a'.repeat(64)}` }), 409)).body).toEqual({ detail: 'digest is not the digest of snapshot version 1' });
      expect(await t.db.query(`SELECT count(*)::int AS n FROM snapshot_instances WHERE workspace_id = $1 AND instance_id <> 'gw-1'`, [ws])).toEqual([{ n: 0 }]);
    });

    it('refuses a malformed report with 422 and an unknown workspace with 404', async () => {
      for (const body of [
        applied({ instance_id: '' }),
        applied({ instance_id: 'x'.repeat(129) }),
        applied({ instance_id: 'bad\nid' }),
        applied({ version: 0 }),
        applied({ digest: 'sha256:xyz' }),
        applied({ extra: true }),
      ]) {
        expect((await report(body, 422)).body.detail).toBeDefined();
      }
      expect((await report(applied({ applied_at: 'yesterday' }), 422)).body.detail).toEqual([{ loc: ['body', 'applied_at'], msg: 'applied_at must be an RFC 3339 timestamp', type: 'value_error' }]);
      expect((await report(applied({ instance_id: 'x'.repeat(128) }), 200)).body.state).toBe('current');
      expect((await report(applied(), 404, 'ws_000000000000000000000000')).body).toEqual({ detail: 'workspace not found' });
    });

    it('accepts only a service token', async () => {
      for (const headers of [{}, bearer(owner)]) {
        const res = await t.http().post(`/internal/v1/workspaces/${ws}/snapshot/applied`).set(headers).send(applied()).expect(401);
        expect(res.body).toEqual({ detail: 'service token not accepted' });
      }
    });
  });
});

describe('gateway-facing routes without SERVICE_JWT_SECRET', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ SERVICE_JWT_SECRET: undefined });
  });
  afterAll(() => t.close());

  it('answers 503 on every /internal route, whatever the credential', async () => {
    const any = await token();
    for (const path of [`/internal/v1/keys/${'a'.repeat(64)}`, '/internal/v1/workspaces/ws_x/snapshot']) {
      for (const headers of [{}, { Authorization: `Bearer ${any}` }]) {
        const res = await t.http().get(path).set(headers).expect(503);
        expect(res.body).toEqual({ detail: 'service authentication is not configured' });
      }
    }
  });
});
