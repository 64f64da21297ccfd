import { createClient, RedisClientType } from 'redis';
import { SignJWT } from 'jose';
import { createHash, randomUUID } from 'node:crypto';
import { signServiceToken } from 'src/common/auth/service-token';
import { SNAPSHOT_PARTS } from 'src/modules/publication/snapshot.registry';
import { bearer, Operator, SERVICE_SECRET, startTestApp, TestApp } from 'test/support/app';
import { REDIS_URL } from 'test/support/database';
import { eventually } from 'test/support/eventually';

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
      await t.db.transaction(async (m) => {
        await m.query(`SET LOCAL session_replication_role = replica`);
        await m.query(`DELETE FROM workspaces WHERE id = $1`, [other.workspaceId]);
      });
      await redis.del(`${t.config.redisPrefix}:key:${sha256(minted.body.plaintext)}`);
      await read(sha256(minted.body.plaintext), 404);
    });
  });

  describe('GET /internal/v1/workspaces/{workspace_id}/snapshot', () => {
    const read = async (ws: string, status: number) => get(`/internal/v1/workspaces/${ws}/snapshot`, `Bearer ${await token()}`).expect(status);

    it('answers the snapshot of the committed state (CONTRACT.md 4.5)', async () => {
      const res = await read(owner.workspaceId, 200);
      expect(Object.keys(res.body).sort()).toEqual(['schema_version', 'workspace_id', 'env', 'version', 'generated_at', ...Object.keys(SNAPSHOT_PARTS)].sort());
      expect(res.body).toMatchObject({ schema_version: 1, workspace_id: owner.workspaceId, env: 'dev', version: 1 });
      expect(res.body.generated_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      // The same content as the published snapshot of that version, apart from when it was generated.
      const published = JSON.parse((await redis.get(`${t.config.redisPrefix}:snapshot:${owner.workspaceId}`))!);
      expect({ ...res.body, generated_at: null }).toEqual({ ...published, generated_at: null });
    });

    it('recompiles on every read: a newly staged version shows at once', async () => {
      const before = (await read(owner.workspaceId, 200)).body.version;
      await t.db.query(`UPDATE workspaces SET snapshot_version = snapshot_version + 1 WHERE id = $1`, [owner.workspaceId]);
      expect((await read(owner.workspaceId, 200)).body.version).toBe(before + 1);
    });

    it('answers 404 workspace not found for an unknown workspace', async () => {
      expect((await read('ws_000000000000000000000000', 404)).body).toEqual({ detail: 'workspace not found' });
    });

    it('answers 503 snapshot_unavailable when a part cannot be built from committed state', async () => {
      // A stored route qualifier with two active constraints cannot be deserialized.
      await t.http().post(`/api/v1/workspaces/${owner.workspaceId}/route-qualifiers`).set(bearer(owner)).send({ qualifier_id: 'broken', constraint: { kind: 'pin', target: 'a' } }).expect(200);
      await t.db.query(`UPDATE route_qualifiers SET only_targets = '["b"]' WHERE workspace_id = $1`, [owner.workspaceId]);
      const res = await read(owner.workspaceId, 503);
      expect(res.body).toEqual({ detail: 'snapshot_unavailable' });
      await t.db.query(`UPDATE route_qualifiers SET only_targets = NULL WHERE workspace_id = $1`, [owner.workspaceId]);
      await read(owner.workspaceId, 200);
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
