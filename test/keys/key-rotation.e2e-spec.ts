import { createHash } from 'node:crypto';
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { AddressInfo } from 'node:net';
import { Client } from 'pg';
import { createClient, RedisClientType } from 'redis';
import { Response } from 'supertest';
import { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';
import { signServiceToken } from 'src/platform/auth/service-token';
import { KeysService } from 'src/modules/keys/keys.service';
import { expectAccessMatrix, roleMembers } from 'test/support/access-matrix';
import { bearer, Operator, SERVICE_SECRET, startTestApp, TestApp } from 'test/support/app';
import { REDIS_URL } from 'test/support/database';
import { eventually } from 'test/support/eventually';
import { ageKeys, ageKeyUse } from 'test/support/factories';
import { GatewayEmulator } from 'test/support/gateway-emulator';
import { GatewayStreams, usageEvent } from 'test/support/streams';
import { TcpProxy } from 'test/support/tcp-proxy';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const DAY_MS = 86_400_000;

interface KeyBody {
  key_id: string;
  plaintext: string;
  last4: string;
  status: string;
  rotated_at: string | null;
  revoked_at: string | null;
  previous: { last4: string; valid_until: string } | null;
  [field: string]: unknown;
}

/** The suite's helpers over one app: operator calls, the hot path, the internal lookup, the emulated gateway. */
function helpers(t: TestApp, redis: RedisClientType) {
  const keysPath = (ws: string) => `/api/v1/workspaces/${ws}/keys`;
  return {
    keysPath,
    mint: async (op: Operator, body: Record<string, unknown> = { agent_id: 'agent-r' }) =>
      (await t.http().post(keysPath(op.workspaceId)).set(bearer(op)).send(body).expect(201)).body as KeyBody,
    rotate: (op: Operator, keyId: string, body?: Record<string, unknown>, ws = op.workspaceId) => {
      const req = t.http().post(`${keysPath(ws)}/${keyId}/rotate`).set(bearer(op));
      return body === undefined ? req : req.send(body);
    },
    revoke: (op: Operator, keyId: string) => t.http().post(`${keysPath(op.workspaceId)}/${keyId}/revoke`).set(bearer(op)),
    getKey: (op: Operator, keyId: string, ws = op.workspaceId) => t.http().get(`${keysPath(ws)}/${keyId}`).set(bearer(op)),
    hotKey: (plaintext: string) => `${t.config.redisPrefix}:key:${sha256(plaintext)}`,
    hot: async (plaintext: string) => {
      const text = await redis.get(`${t.config.redisPrefix}:key:${sha256(plaintext)}`);
      return text === null ? null : JSON.parse(text);
    },
    internal: async (plaintext: string) =>
      t.http().get(`/internal/v1/keys/${sha256(plaintext)}`).set('Authorization', `Bearer ${await signServiceToken(SERVICE_SECRET, 'gateway', 'control')}`),
    count: async (sql: string, params: unknown[]) => Number((await t.db.query(sql, params))[0].n),
    /** Every hot-path entry of the key, wherever its digest. */
    entriesOf: async (keyId: string) => {
      const names = await redis.keys(`${t.config.redisPrefix}:key:*`);
      const values = names.length > 0 ? await redis.mGet(names) : [];
      return values.filter((v) => v !== null && JSON.parse(v).key_id === keyId).length;
    },
  };
}

describe('key rotation', () => {
  let t: TestApp;
  let redis: RedisClientType;
  let gw: GatewayEmulator;
  let owner: Operator;
  let h: ReturnType<typeof helpers>;

  beforeAll(async () => {
    t = await startTestApp();
    await t.app.listen(0, '127.0.0.1');
    redis = createClient({ url: REDIS_URL });
    await redis.connect();
    gw = await GatewayEmulator.start();
    gw.resolveKeysWith({ redis, prefix: t.config.redisPrefix, controlUrl: `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}` });
    owner = await t.signIn();
    h = helpers(t, redis);
  });
  afterAll(async () => {
    redis.destroy();
    await gw.stop();
    await t.close();
  });

  /** What the emulated gateway answers an agent presenting `plaintext`. */
  const agent = async (plaintext: string) => {
    const res = await fetch(`${gw.url}/v1/key`, { headers: { authorization: `Bearer ${plaintext}` } });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const rotateOk = async (keyId: string, body: Record<string, unknown> = { grace_seconds: 3600 }) => (await h.rotate(owner, keyId, body).expect(200)).body as KeyBody;

  it('answers the same key with a new secret, the old one valid for the grace, settings and identity untouched', async () => {
    const minted = await h.mint(owner, {
      agent_id: 'agent-rotate', allowed_models: ['gpt-*'], allowed_tools: ['github.*'], tools_mode: 'progressive',
      budget_micros_usd_month: 5_000_000, rpm: 60, tpm: 1000, scopes: ['llm'], attributes: { team: 'ops' },
      expires_at: new Date(Date.now() + 30 * DAY_MS).toISOString(),
    });
    const rotated = await rotateOk(minted.key_id, { grace_seconds: 600 });
    const unchanged = (({ plaintext, last4, rotated_at, previous, ...rest }: KeyBody) => rest)(minted);
    expect(rotated).toEqual({
      ...unchanged,
      plaintext: expect.stringMatching(/^ob_test_[A-Za-z0-9_-]{43}$/),
      last4: rotated.plaintext.slice(-4),
      rotated_at: expect.stringMatching(RFC3339),
      previous: { last4: minted.last4, valid_until: new Date(Date.parse(rotated.rotated_at!) + 600_000).toISOString() },
    });
    expect(rotated.plaintext).not.toBe(minted.plaintext);

    // Stored: the new digest and the replaced one, never a secret.
    const [row] = await t.db.query(`SELECT key_hash, previous_key_hash, previous_last4 FROM virtual_keys WHERE id = $1`, [minted.key_id]);
    expect(row).toEqual({ key_hash: sha256(rotated.plaintext), previous_key_hash: sha256(minted.plaintext), previous_last4: minted.last4 });

    // Audit: key.rotate with key_id, the new last4 and the prefix; no secret or digest.
    const audits = await t.db.query(`SELECT actor_user_id, target, detail FROM audit_events WHERE action = 'key.rotate' AND target = $1`, [minted.key_id]);
    expect(audits).toEqual([{ actor_user_id: owner.userId, target: minted.key_id, detail: { key_id: minted.key_id, last4: rotated.last4, prefix: 'ob_test' } }]);
    for (const secret of [minted.plaintext, rotated.plaintext, sha256(minted.plaintext), sha256(rotated.plaintext)]) expect(JSON.stringify(audits)).not.toContain(secret);

    // Hot path: both digests, the same context; the old one carries valid_until and expires then.
    const current = await h.hot(rotated.plaintext);
    const old = await h.hot(minted.plaintext);
    expect(current).toMatchObject({ key_id: minted.key_id, status: 'active', valid_until: null, budget_micros_usd_month: 5_000_000, rpm: 60, tpm: 1000 });
    expect(old).toEqual({ ...current, valid_until: rotated.previous!.valid_until });
    const ttl = await redis.pTTL(h.hotKey(minted.plaintext));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(600_000);

    // The internal lookup answers both the same way; the emulated gateway accepts both.
    expect((await h.internal(rotated.plaintext)).body).toEqual(current);
    expect((await h.internal(minted.plaintext)).body).toEqual(old);
    expect(await agent(minted.plaintext)).toEqual({ status: 200, body: old });
    expect(await agent(rotated.plaintext)).toEqual({ status: 200, body: current });
    expect((await h.getKey(owner, minted.key_id).expect(200)).body).toEqual({ ...(({ plaintext, ...rest }) => rest)(rotated), hot_path: 'published' });
  });

  it('stops the old secret when the grace ends: Redis expiry, the database and the gateway agree', async () => {
    const minted = await h.mint(owner);
    const rotated = await rotateOk(minted.key_id, { grace_seconds: 3 });
    expect((await agent(minted.plaintext)).status).toBe(200);
    await eventually(async () => expect((await agent(minted.plaintext)).status).toBe(401));
    // Redis drops the entry once its expiry has passed; the gateway refuses from that millisecond on.
    await eventually(async () => expect(await h.hot(minted.plaintext)).toBeNull());
    expect((await h.internal(minted.plaintext)).status).toBe(404);
    expect((await agent(rotated.plaintext)).status).toBe(200);
    // The removal is due: pending until the key-sync job confirms it, then published.
    expect((await h.getKey(owner, minted.key_id).expect(200)).body.hot_path).toBe('pending');
    await t.app.get(KeysService).reconcile();
    expect((await h.getKey(owner, minted.key_id).expect(200)).body).toMatchObject({ hot_path: 'published', previous: { last4: minted.last4, valid_until: rotated.previous!.valid_until } });
    expect(await h.count(`SELECT count(*) AS n FROM virtual_key_removals WHERE key_id = $1`, [minted.key_id])).toBe(0);
  });

  it('has the key-sync job remove an old digest that a missed expiry left in Redis', async () => {
    const minted = await h.mint(owner);
    await rotateOk(minted.key_id, { grace_seconds: 1 });
    const leftover = await h.hot(minted.plaintext);
    await redis.set(h.hotKey(minted.plaintext), JSON.stringify(leftover)); // no TTL any more: the expiry was missed
    await eventually(async () => expect((await h.internal(minted.plaintext)).status).toBe(404));
    expect(await redis.exists(h.hotKey(minted.plaintext))).toBe(1);
    expect(await t.app.get(KeysService).reconcile()).toBeGreaterThanOrEqual(1);
    expect(await redis.exists(h.hotKey(minted.plaintext))).toBe(0);
  });

  it('ends the old secret at once with grace_seconds 0', async () => {
    const minted = await h.mint(owner);
    const rotated = await rotateOk(minted.key_id, { grace_seconds: 0 });
    expect(rotated.previous).toEqual({ last4: minted.last4, valid_until: rotated.rotated_at });
    expect(await redis.exists(h.hotKey(minted.plaintext))).toBe(0);
    expect((await h.internal(minted.plaintext)).status).toBe(404);
    expect((await agent(minted.plaintext)).status).toBe(401);
    expect((await agent(rotated.plaintext)).status).toBe(200);
    expect((await h.getKey(owner, minted.key_id).expect(200)).body.hot_path).toBe('published');
  });

  it('defaults the grace to one day and never past the key expiry', async () => {
    const plain = await h.mint(owner);
    const byDefault = (await h.rotate(owner, plain.key_id).expect(200)).body as KeyBody;
    expect(Date.parse(byDefault.previous!.valid_until) - Date.parse(byDefault.rotated_at!)).toBe(DAY_MS);
    const viaNull = await rotateOk(plain.key_id, { grace_seconds: null });
    expect(Date.parse(viaNull.previous!.valid_until) - Date.parse(viaNull.rotated_at!)).toBe(DAY_MS);

    const expiresAt = new Date(Date.now() + 3_600_000).toISOString().replace(/\.\d{3}Z$/, '.000Z');
    const expiring = await h.mint(owner, { agent_id: 'exp', expires_at: expiresAt });
    const rotated = await rotateOk(expiring.key_id, { grace_seconds: 604_800 });
    expect(rotated.previous!.valid_until).toBe(expiresAt);
    expect(rotated.expires_at).toBe(expiresAt);
    expect((await h.hot(expiring.plaintext)).valid_until).toBe(expiresAt);
    expect(await redis.pTTL(h.hotKey(expiring.plaintext))).toBeLessThanOrEqual(3_600_000);
  });

  it('ends the older secret at once on a second rotation inside the grace: at most two secrets', async () => {
    const minted = await h.mint(owner);
    const first = await rotateOk(minted.key_id);
    const second = await rotateOk(minted.key_id);
    expect(second.previous).toEqual({ last4: first.last4, valid_until: expect.stringMatching(RFC3339) });
    expect(await redis.exists(h.hotKey(minted.plaintext))).toBe(0);
    expect((await h.internal(minted.plaintext)).status).toBe(404);
    expect((await agent(minted.plaintext)).status).toBe(401);
    expect((await agent(first.plaintext)).body.valid_until).toBe(second.previous!.valid_until);
    expect((await agent(second.plaintext)).status).toBe(200);
    expect(await h.entriesOf(minted.key_id)).toBe(2);
    expect(await h.count(`SELECT count(*) AS n FROM audit_events WHERE action = 'key.rotate' AND target = $1`, [minted.key_id])).toBe(2);
  });

  it('ends both secrets on revoke; both digests then answer revoked, never active', async () => {
    const minted = await h.mint(owner);
    const rotated = await rotateOk(minted.key_id);
    const revoked = (await h.revoke(owner, minted.key_id).expect(200)).body as KeyBody;
    expect(revoked).toMatchObject({ status: 'revoked', previous: { last4: minted.last4, valid_until: revoked.revoked_at } });
    expect(await h.entriesOf(minted.key_id)).toBe(0);
    for (const secret of [minted.plaintext, rotated.plaintext]) {
      expect((await h.internal(secret)).body).toMatchObject({ key_id: minted.key_id, status: 'revoked', revoked_at: revoked.revoked_at });
      expect((await agent(secret)).status).toBe(401);
    }
    expect((await h.getKey(owner, minted.key_id).expect(200)).body).toMatchObject({ status: 'revoked', hot_path: 'removed' });
  });

  it('refuses to rotate a revoked or expired key (409) and writes nothing', async () => {
    const revoked = await h.mint(owner);
    await h.revoke(owner, revoked.key_id).expect(200);
    const expired = await h.mint(owner, { agent_id: 'old', expires_at: '2020-01-01T00:00:00Z' });
    const audits = await h.count(`SELECT count(*) AS n FROM audit_events WHERE action = 'key.rotate' AND workspace_id = $1`, [owner.workspaceId]);
    expect((await h.rotate(owner, revoked.key_id, {}).expect(409)).body).toEqual({ detail: 'key is revoked and cannot be rotated' });
    expect((await h.rotate(owner, expired.key_id, {}).expect(409)).body).toEqual({ detail: 'key has expired and cannot be rotated' });
    const rows = await t.db.query(`SELECT key_hash, rotated_at FROM virtual_keys WHERE id = ANY($1) ORDER BY created_at`, [[revoked.key_id, expired.key_id]]);
    expect(rows).toEqual([{ key_hash: sha256(revoked.plaintext), rotated_at: null }, { key_hash: sha256(expired.plaintext), rotated_at: null }]);
    expect(await h.count(`SELECT count(*) AS n FROM audit_events WHERE action = 'key.rotate' AND workspace_id = $1`, [owner.workspaceId])).toBe(audits);
  });

  it('lets exactly one of 20 concurrent rotations win; the others answer 409 and write nothing', async () => {
    const minted = await h.mint(owner);
    // Make the 20 overlap for sure: hold the workspace row until every request has arrived (each
    // pooled connection waits for the row, the other requests wait for a connection).
    const holder = new Client({ connectionString: t.config.databaseUrl });
    await holder.connect();
    const pool = (t.db.driver as PostgresDriver).master as { waitingCount: number };
    let pending: Promise<Response[]>;
    try {
      await holder.query(`BEGIN`);
      await holder.query(`SELECT 1 FROM workspaces WHERE id = $1 FOR UPDATE`, [owner.workspaceId]);
      pending = Promise.all(Array.from({ length: 20 }, () => h.rotate(owner, minted.key_id, { grace_seconds: 3600 }).then((r) => r)));
      await eventually(async () => {
        await holder.query(`SELECT pg_stat_clear_snapshot()`); // statistics are otherwise frozen for the transaction
        const [{ n }] = (await holder.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`)).rows;
        expect(n + pool.waitingCount).toBe(20);
      });
      await holder.query(`COMMIT`);
    } finally {
      await holder.end();
    }
    const results = await pending;
    const won = results.filter((r) => r.status === 200);
    expect(won).toHaveLength(1);
    for (const r of results.filter((x) => x.status !== 200)) expect([r.status, r.body]).toEqual([409, { detail: 'key was rotated by a concurrent request' }]);
    expect(await h.count(`SELECT count(*) AS n FROM audit_events WHERE action = 'key.rotate' AND target = $1`, [minted.key_id])).toBe(1);
    expect(await h.entriesOf(minted.key_id)).toBe(2);
    expect((await agent(minted.plaintext)).status).toBe(200);
    expect((await agent(won[0].body.plaintext)).status).toBe(200);
  });

  describe('rotations from two places', () => {
    /** `count` HTTP connections to the app opened beforehand, so `count` requests leave together; POSTs a JSON body on each at once. */
    const preopened = async (count: number) => {
      const port = (t.app.getHttpServer().address() as AddressInfo).port;
      const agent = new HttpAgent({ keepAlive: true, maxSockets: count });
      const send = (method: string, path: string, body?: object) =>
        new Promise<{ status: number; body: Record<string, unknown> }>((resolve, reject) => {
          const req = httpRequest({ host: '127.0.0.1', port, method, path, agent, headers: { ...bearer(owner), 'content-type': 'application/json' } }, (res) => {
            let text = '';
            res.on('data', (chunk: Buffer) => (text += chunk.toString()));
            res.on('end', () => resolve({ status: res.statusCode!, body: text ? JSON.parse(text) : {} }));
          });
          req.on('error', reject);
          req.end(body === undefined ? undefined : JSON.stringify(body));
        });
      await Promise.all(Array.from({ length: count }, () => send('GET', '/healthz')));
      expect(Object.values(agent.freeSockets).flat()).toHaveLength(count);
      return {
        all: (path: string, body: object) => Promise.all(Array.from({ length: count }, () => send('POST', path, body))),
        close: () => agent.destroy(),
      };
    };
    /** The service's wall clock off by `ms` from the database's while `work` runs. */
    const skewed = async <T>(ms: number, work: () => Promise<T>): Promise<T> => {
      const real = Date.now.bind(Date);
      const spy = jest.spyOn(Date, 'now').mockImplementation(() => real() + ms);
      try {
        return await work();
      } finally {
        spy.mockRestore();
      }
    };
    const outcome = async (keyId: string, results: { status: number; body: Record<string, unknown> }[]) => {
      const won = results.filter((r) => r.status === 200);
      for (const r of results.filter((x) => x.status !== 200)) expect([r.status, r.body]).toEqual([409, { detail: 'key was rotated by a concurrent request' }]);
      expect(await h.count(`SELECT count(*) AS n FROM audit_events WHERE action = 'key.rotate' AND target = $1`, [keyId])).toBe(won.length);
      return won;
    };

    it('twenty simultaneous rotations over pre-opened connections, with the service clock 10 minutes ahead of the database: one wins', async () => {
      const minted = await h.mint(owner);
      const connections = await preopened(20);
      try {
        const results = await skewed(10 * 60_000, () => connections.all(`${h.keysPath(owner.workspaceId)}/${minted.key_id}/rotate`, { grace_seconds: 3600 }));
        expect(await outcome(minted.key_id, results)).toHaveLength(1);
      } finally {
        connections.close();
      }
    });

    it('twenty simultaneous rotations with expected_last4: exactly one wins, whatever the timing', async () => {
      const minted = await h.mint(owner);
      const connections = await preopened(20);
      try {
        const results = await connections.all(`${h.keysPath(owner.workspaceId)}/${minted.key_id}/rotate`, { grace_seconds: 3600, expected_last4: minted.last4 });
        const [won] = await outcome(minted.key_id, results);
        expect(won.body).toMatchObject({ previous: { last4: minted.last4 } });
      } finally {
        connections.close();
      }
    });

    it('a deliberate second rotation goes through with the service clock 10 minutes behind; a stale expected_last4 is 409 and writes nothing', async () => {
      const minted = await h.mint(owner);
      const [first, second] = await skewed(-10 * 60_000, async () => [await rotateOk(minted.key_id), await rotateOk(minted.key_id)]);
      expect(second.previous!.last4).toBe(first.last4);
      const stale = await h.rotate(owner, minted.key_id, { expected_last4: first.last4 }).expect(409);
      expect(stale.body).toEqual({ detail: 'key was rotated by a concurrent request' });
      const [row] = await t.db.query(`SELECT key_hash FROM virtual_keys WHERE id = $1`, [minted.key_id]);
      expect(row.key_hash).toBe(sha256(second.plaintext));
      expect(await h.count(`SELECT count(*) AS n FROM audit_events WHERE action = 'key.rotate' AND target = $1`, [minted.key_id])).toBe(2);
      // Right after another rotation, from the place that knows the current secret: accepted.
      const third = await rotateOk(minted.key_id, { expected_last4: second.last4 });
      expect(third.previous!.last4).toBe(second.last4);
    });
  });

  it('answers 404 key not found for an unknown key or one of another workspace', async () => {
    const other = await t.signIn();
    const theirs = await h.mint(other);
    for (const keyId of ['key_000000000000000000000000', theirs.key_id]) {
      expect((await h.rotate(owner, keyId, {}).expect(404)).body).toEqual({ detail: 'key not found' });
      expect((await h.getKey(owner, keyId).expect(404)).body).toEqual({ detail: 'key not found' });
    }
    const [row] = await t.db.query(`SELECT key_hash, rotated_at FROM virtual_keys WHERE id = $1`, [theirs.key_id]);
    expect(row).toEqual({ key_hash: sha256(theirs.plaintext), rotated_at: null });
  });

  it('validates grace_seconds (an integer from 0 to 604800) and refuses unknown fields, writing nothing', async () => {
    const minted = await h.mint(owner);
    const cases: [Record<string, unknown>, string, string][] = [
      [{ grace_seconds: -1 }, 'grace_seconds', 'greater_than_equal'],
      [{ grace_seconds: 604_801 }, 'grace_seconds', 'less_than_equal'],
      [{ grace_seconds: 1.5 }, 'grace_seconds', 'int_type'],
      [{ grace_seconds: '60' }, 'grace_seconds', 'int_type'],
      [{ grace_seconds: true }, 'grace_seconds', 'int_type'],
      [{ grace: 60 }, 'grace', 'extra_forbidden'],
      [{ expected_last4: 'abc' }, 'expected_last4', 'value_error'],
      [{ expected_last4: 'abcde' }, 'expected_last4', 'value_error'],
      [{ expected_last4: null }, 'expected_last4', 'string_type'],
      [{ expected_last4: 1234 }, 'expected_last4', 'string_type'],
    ];
    for (const [body, field, type] of cases) {
      const res = await h.rotate(owner, minted.key_id, body).expect(422);
      expect(res.body.detail).toEqual(expect.arrayContaining([expect.objectContaining({ loc: ['body', field], type, msg: expect.any(String) })]));
    }
    const [row] = await t.db.query(`SELECT key_hash, rotated_at FROM virtual_keys WHERE id = $1`, [minted.key_id]);
    expect(row).toEqual({ key_hash: sha256(minted.plaintext), rotated_at: null });
  });

  describe('GET one key', () => {
    it('answers the document with hot_path: published for an active key, removed for a revoked or expired one', async () => {
      const active = await h.mint(owner);
      const expired = await h.mint(owner, { agent_id: 'old', expires_at: '2020-01-01T00:00:00Z' });
      const revoked = await h.mint(owner);
      await h.revoke(owner, revoked.key_id).expect(200);
      const res = await h.getKey(owner, active.key_id).expect(200);
      expect(res.body).toEqual({ ...(({ plaintext, ...rest }) => rest)(active), hot_path: 'published' });
      expect(JSON.stringify(res.body)).not.toContain(sha256(active.plaintext));
      expect(res.headers['cache-control']).toBe('no-store');
      expect((await h.getKey(owner, expired.key_id).expect(200)).body).toMatchObject({ status: 'expired', hot_path: 'removed' });
      expect((await h.getKey(owner, revoked.key_id).expect(200)).body).toMatchObject({ status: 'revoked', hot_path: 'removed' });
    });
  });

  describe('authorization', () => {
    it('applies the matrix to GET one key (workspace.read) and rotate (key.manage, frozen 409)', async () => {
      const ws = await t.signIn();
      const members = await roleMembers(t, ws);
      const minted = await h.mint(ws);
      await expectAccessMatrix(t, ws, members, { method: 'get', path: (w) => `${h.keysPath(w)}/${minted.key_id}`, minRole: 'viewer', read: true });
      await expectAccessMatrix(t, ws, members, { method: 'post', path: (w) => `${h.keysPath(w)}/${minted.key_id}/rotate`, body: {}, minRole: 'developer', read: false });
      const [row] = await t.db.query(`SELECT key_hash, rotated_at FROM virtual_keys WHERE id = $1`, [minted.key_id]);
      expect(row).toEqual({ key_hash: sha256(minted.plaintext), rotated_at: null });
      await h.rotate(members.developer, minted.key_id, {}).expect(200);
    });
  });

  describe('seen in use', () => {
    let streams: GatewayStreams;
    beforeAll(() => {
      streams = new GatewayStreams(t);
    });
    afterAll(() => streams.close());

    const ago = (ms: number) => new Date(Date.now() - ms).toISOString();
    const rotateOkAs = async (op: Operator, keyId: string) => (await h.rotate(op, keyId, {}).expect(200)).body as KeyBody;
    const ingest = async (...entries: object[]) => {
      await streams.add('usage', ...entries);
      await streams.pass('usage');
    };

    it('takes last_used_at from the usage stream: the latest occurred_at per key, never backwards', async () => {
      const op = await t.signIn();
      const a = await h.mint(op, { agent_id: 'a' });
      const b = await h.mint(op, { agent_id: 'b' });
      const latest = ago(60_000);
      await ingest(
        usageEvent(op.workspaceId, { key_id: a.key_id, occurred_at: ago(3_600_000) }),
        usageEvent(op.workspaceId, { key_id: a.key_id, occurred_at: latest }),
        usageEvent(op.workspaceId, { key_id: a.key_id, occurred_at: ago(120_000) }),
        // Another workspace naming b's key id is not a use of b's key.
        usageEvent(owner.workspaceId, { key_id: b.key_id, occurred_at: ago(1000) }),
      );
      expect((await h.getKey(op, a.key_id).expect(200)).body).toMatchObject({ last_used_at: latest, idle: false });
      expect((await h.getKey(op, b.key_id).expect(200)).body.last_used_at).toBeNull();
      // An older event delivered later never moves it back.
      await ingest(usageEvent(op.workspaceId, { key_id: a.key_id, occurred_at: ago(7_200_000) }));
      expect((await h.getKey(op, a.key_id).expect(200)).body.last_used_at).toBe(latest);
      // Rotation keeps it (same key_id).
      expect((await rotateOkAs(op, a.key_id)).last_used_at).toBe(latest);
    });

    it('lists by last use (sort=last_used: never used first, then longest unused) and marks idle keys', async () => {
      const op = await t.signIn();
      const recent = await h.mint(op, { agent_id: 'recent' });
      const stale = await h.mint(op, { agent_id: 'stale' });
      const never = await h.mint(op, { agent_id: 'never' });
      await ingest(
        usageEvent(op.workspaceId, { key_id: recent.key_id, occurred_at: ago(60_000) }),
        usageEvent(op.workspaceId, { key_id: stale.key_id, occurred_at: ago(2 * DAY_MS) }),
      );
      // `stale` last used 91 days ago and created long before: idle under the default 90 days.
      await ageKeyUse(t, stale.key_id, 91);
      await ageKeys(t, op.workspaceId, 200);
      const listed = (await t.http().get(h.keysPath(op.workspaceId)).query({ sort: 'last_used' }).set(bearer(op)).expect(200)).body.keys;
      expect(listed.map((k: KeyBody) => [k.agent_id, k.idle])).toEqual([['never', true], ['stale', true], ['recent', false]]);
      const byCreation = (await t.http().get(h.keysPath(op.workspaceId)).set(bearer(op)).expect(200)).body.keys;
      expect(byCreation.map((k: KeyBody) => k.key_id)).toEqual([recent.key_id, stale.key_id, never.key_id]);
      const bad = await t.http().get(h.keysPath(op.workspaceId)).query({ sort: 'newest' }).set(bearer(op)).expect(422);
      expect(bad.body.detail).toEqual([expect.objectContaining({ loc: ['query', 'sort'] })]);
    });
  });
});

describe('revocation during a Redis outage', () => {
  let proxy: TcpProxy;
  let t: TestApp;
  let redis: RedisClientType;
  let owner: Operator;
  let h: ReturnType<typeof helpers>;

  beforeAll(async () => {
    proxy = await TcpProxy.start(REDIS_URL);
    t = await startTestApp({ REDIS_URL: proxy.url }, { jobs: true });
    redis = createClient({ url: REDIS_URL });
    await redis.connect();
    owner = await t.signIn();
    h = helpers(t, redis);
  });
  afterAll(async () => {
    redis.destroy();
    await t.close();
    await proxy.stop();
  });

  it('answers 200, never resolves either digest as active, and converges once Redis is back', async () => {
    const minted = await h.mint(owner);
    const rotated = (await h.rotate(owner, minted.key_id, { grace_seconds: 3600 }).expect(200)).body as KeyBody;
    const during = await h.mint(owner, { agent_id: 'rotated-during' });
    expect(await h.entriesOf(minted.key_id)).toBe(2);

    await proxy.stop();
    {
      const revoked = await h.revoke(owner, minted.key_id).expect(200);
      expect(revoked.body.status).toBe('revoked');
      // A rotation during the outage commits too.
      const duringRotated = (await h.rotate(owner, during.key_id, { grace_seconds: 0 }).expect(200)).body as KeyBody;
      expect((await h.getKey(owner, minted.key_id).expect(200)).body.hot_path).toBe('pending');
      expect((await h.getKey(owner, during.key_id).expect(200)).body.hot_path).toBe('pending');
      // Redis still holds the stale entries, but the internal lookup answers from the database.
      expect(await h.entriesOf(minted.key_id)).toBe(2);
      for (const secret of [minted.plaintext, rotated.plaintext]) expect((await h.internal(secret)).body).toMatchObject({ status: 'revoked' });
      expect((await h.internal(during.plaintext)).status).toBe(404);
      expect((await h.internal(duringRotated.plaintext)).body).toMatchObject({ status: 'active', valid_until: null });

      // Redis reachable again for the reader only: the control's lookup still never answers active.
      await proxy.start();
      for (const secret of [minted.plaintext, rotated.plaintext]) expect((await h.internal(secret)).body.status).toBe('revoked');
      await eventually(async () => {
        expect((await h.getKey(owner, minted.key_id).expect(200)).body.hot_path).toBe('removed');
        expect((await h.getKey(owner, during.key_id).expect(200)).body.hot_path).toBe('published');
      });
      expect(await h.entriesOf(minted.key_id)).toBe(0);
      expect(await redis.exists(h.hotKey(during.plaintext))).toBe(0);
      expect(await h.hot(duringRotated.plaintext)).toMatchObject({ key_id: during.key_id, status: 'active' });
    }
  });
});
