import { createClient, RedisClientType } from 'redis';
import { createHash } from 'node:crypto';
import { signServiceToken } from 'src/platform/auth/service-token';
import { REDIS_TIMEOUT_MS } from 'src/database/redis.module';
import { inTransaction } from 'src/database/transaction';
import { PublicationService } from 'src/modules/publication/publication.service';
import { bearer, Operator, SERVICE_SECRET, startTestApp, TestApp } from 'test/support/app';
import { REDIS_URL } from 'test/support/database';
import { eventually } from 'test/support/eventually';
import { TcpProxy } from 'test/support/tcp-proxy';
import { markUnpublished, corruptRouteQualifiers } from 'test/support/factories';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

async function versions(t: TestApp, ws: string): Promise<{ snapshot_version: number; published_version: number }> {
  const [row] = await t.db.query(`SELECT snapshot_version, published_version FROM workspaces WHERE id = $1`, [ws]);
  return row;
}

async function heldVersion(redis: RedisClientType, t: TestApp, ws: string): Promise<number | null> {
  const text = await redis.get(`${t.config.redisPrefix}:snapshot:${ws}`);
  return text === null ? null : (JSON.parse(text) as { version: number }).version;
}

describe('snapshot publication', () => {
  let t: TestApp;
  let redis: RedisClientType;
  let publications: PublicationService;
  let owner: Operator;

  beforeAll(async () => {
    t = await startTestApp();
    redis = createClient({ url: REDIS_URL });
    await redis.connect();
    publications = t.app.get(PublicationService);
    owner = await t.signIn();
  });
  afterAll(async () => {
    redis.destroy();
    await t.close();
  });

  const createWorkspace = async (slug: string) =>
    (await t.http().post('/api/v1/workspaces').set(bearer(owner)).send({ org_id: owner.orgId, slug }).expect(201)).body.id as string;

  it('publishes the first snapshot of a /me-provisioned workspace after commit', async () => {
    expect(await versions(t, owner.workspaceId)).toEqual({ snapshot_version: 1, published_version: 1 });
    expect(await heldVersion(redis, t, owner.workspaceId)).toBe(1);
  });

  it('publishes the first snapshot of a created workspace and announces it', async () => {
    // A subscribed connection runs only (un)subscribe commands: one of its own.
    const subscriber = redis.duplicate();
    await subscriber.connect();
    const messages: string[] = [];
    await subscriber.subscribe(`${t.config.redisPrefix}:snapshots`, (message) => messages.push(message));
    try {
      const ws = await createWorkspace('announced');
      expect(await versions(t, ws)).toEqual({ snapshot_version: 1, published_version: 1 });
      expect(await heldVersion(redis, t, ws)).toBe(1);
      const digest = JSON.parse((await redis.get(`${t.config.redisPrefix}:snapshot:${ws}`))!).integrity.digest;
      expect(digest).toMatch(/^sha256:[0-9a-f]{64}$/);
      await eventually(async () => expect(messages).toContain(`${ws}:1:${digest}`));
    } finally {
      subscriber.destroy();
    }
  });

  it('stages in the caller transaction and publishes after commit', async () => {
    const ws = await createWorkspace('staged');
    const staged = await inTransaction(t.db, (tx) => publications.stage(tx, ws, 'policy.publish'));
    expect(staged).toBe(2);
    expect(await versions(t, ws)).toEqual({ snapshot_version: 2, published_version: 2 });
    expect(await heldVersion(redis, t, ws)).toBe(2);
  });

  it('stages nothing and publishes nothing when the transaction rolls back', async () => {
    const ws = await createWorkspace('rolled-back');
    await expect(
      inTransaction(t.db, async (tx) => {
        await publications.stage(tx, ws, 'policy.publish');
        throw new Error('change refused');
      }),
    ).rejects.toThrow('change refused');
    expect(await versions(t, ws)).toEqual({ snapshot_version: 1, published_version: 1 });
    expect(await heldVersion(redis, t, ws)).toBe(1);
  });

  it('never moves the hot path back to an older version', async () => {
    const ws = await createWorkspace('monotonic');
    const name = `${t.config.redisPrefix}:snapshot:${ws}`;
    await redis.set(name, JSON.stringify({ version: 7, marker: 'newer' }));
    expect(await publications.publish(ws)).toBe(true);
    expect(JSON.parse((await redis.get(name))!)).toEqual({ version: 7, marker: 'newer' });
  });

  it('serializes concurrent stages: each gets its own version, the hot path ends on the last', async () => {
    const ws = await createWorkspace('concurrent');
    const staged = await Promise.all(Array.from({ length: 5 }, () => inTransaction(t.db, (tx) => publications.stage(tx, ws, 'policy.publish'))));
    expect([...staged].sort()).toEqual([2, 3, 4, 5, 6]);
    expect(await versions(t, ws)).toEqual({ snapshot_version: 6, published_version: 6 });
    expect(await heldVersion(redis, t, ws)).toBe(6);
  });

  it('reconciles every pending workspace, page after page', async () => {
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push(await createWorkspace(`pending-${i}`));
    await markUnpublished(t, ids);
    for (const ws of ids) await redis.del(`${t.config.redisPrefix}:snapshot:${ws}`);
    expect(await publications.reconcile(2)).toBeGreaterThanOrEqual(5);
    for (const ws of ids) {
      expect(await versions(t, ws)).toEqual({ snapshot_version: 1, published_version: 1 });
      expect(await heldVersion(redis, t, ws)).toBe(1);
    }
  });

  it('leaves the workspace pending (never failing the write) while a part cannot be built, then settles', async () => {
    const ws = await createWorkspace('unbuildable');
    // A stored route qualifier with two active constraints cannot be deserialized into the snapshot.
    await t.http().post(`/api/v1/workspaces/${ws}/route-qualifiers`).set(bearer(owner)).send({ qualifier_id: 'broken', constraint: { kind: 'pin', target: 'a' } }).expect(200);
    await publications.reconcile();
    const settled = (await versions(t, ws)).snapshot_version;
    await corruptRouteQualifiers(t, ws, ['b']);
    const staged = await inTransaction(t.db, (tx) => publications.stage(tx, ws, 'policy.publish'));
    expect(await versions(t, ws)).toEqual({ snapshot_version: staged, published_version: settled });
    expect(await heldVersion(redis, t, ws)).toBe(settled);
    await publications.reconcile();
    expect(await versions(t, ws)).toEqual({ snapshot_version: staged, published_version: settled });
    await corruptRouteQualifiers(t, ws, null);
    await publications.reconcile();
    expect(await versions(t, ws)).toEqual({ snapshot_version: staged, published_version: staged });
    expect(await heldVersion(redis, t, ws)).toBe(staged);
  });
});

describe('a Redis outage', () => {
  // The app reaches Redis through a TCP proxy: stopping the proxy makes the Redis server unreachable
  // for the app (connections cut, new ones refused); starting it again brings Redis back.
  let proxy: TcpProxy;
  let t: TestApp;
  let redis: RedisClientType;
  let owner: Operator;
  const logged: string[] = [];
  let write: jest.SpyInstance;

  beforeAll(async () => {
    write = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      logged.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString());
      return true;
    });
    proxy = await TcpProxy.start(REDIS_URL);
    t = await startTestApp({ REDIS_URL: proxy.url, LOG_LEVEL: 'debug' }, { jobs: true });
    redis = createClient({ url: REDIS_URL });
    await redis.connect();
    owner = await t.signIn();
  });
  afterAll(async () => {
    redis.destroy();
    await t.close();
    await proxy.stop();
    write.mockRestore();
  });

  const prefix = () => t.config.redisPrefix;
  const mint = (agent: string) => t.http().post(`/api/v1/workspaces/${owner.workspaceId}/keys`).set(bearer(owner)).send({ agent_id: agent }).expect(201);
  const lookup = async (plaintext: string) =>
    t.http().get(`/internal/v1/keys/${sha256(plaintext)}`).set('Authorization', `Bearer ${await signServiceToken(SERVICE_SECRET, 'gateway', 'control')}`).expect(200);
  const pending = async (keyId: string) => (await t.db.query(`SELECT hot_path_pending FROM virtual_keys WHERE id = $1`, [keyId]))[0].hot_path_pending as boolean;

  it('never fails or loses a write, and the jobs settle everything once Redis is back', async () => {
    const before = (await mint('before-outage')).body;
    expect(await redis.exists(`${prefix()}:key:${sha256(before.plaintext)}`)).toBe(1);

    await proxy.stop();

    // Mint: succeeds, audited, hot-path write pending; the gateway's fallback read still answers.
    const during = (await mint('during-outage')).body;
    expect(during.status).toBe('active');
    expect(await t.db.query(`SELECT 1 FROM audit_events WHERE action = 'key.mint' AND target = $1`, [during.key_id])).toHaveLength(1);
    expect(await pending(during.key_id)).toBe(true);
    expect(await redis.exists(`${prefix()}:key:${sha256(during.plaintext)}`)).toBe(0);
    expect((await lookup(during.plaintext)).body).toMatchObject({ key_id: during.key_id, status: 'active' });

    // Revoke: succeeds, audited; the stale hot-path entry is still there until Redis is back.
    const revoked = await t.http().post(`/api/v1/workspaces/${owner.workspaceId}/keys/${before.key_id}/revoke`).set(bearer(owner)).expect(200);
    expect(revoked.body.status).toBe('revoked');
    expect(await pending(before.key_id)).toBe(true);
    expect(await redis.exists(`${prefix()}:key:${sha256(before.plaintext)}`)).toBe(1);
    expect((await lookup(before.plaintext)).body.status).toBe('revoked');

    // Workspace creation: succeeds, revision and audit row kept, publication pending.
    const ws = (await t.http().post('/api/v1/workspaces').set(bearer(owner)).send({ org_id: owner.orgId, slug: 'during-outage' }).expect(201)).body.id;
    expect(await versions(t, ws)).toEqual({ snapshot_version: 1, published_version: 0 });
    expect(await t.db.query(`SELECT 1 FROM audit_events WHERE action = 'workspace.create' AND workspace_id = $1`, [ws])).toHaveLength(1);
    expect(await heldVersion(redis, t, ws)).toBeNull();

    await proxy.start();

    await eventually(async () => {
      expect(await versions(t, ws)).toEqual({ snapshot_version: 1, published_version: 1 });
      expect(await pending(during.key_id)).toBe(false);
      expect(await pending(before.key_id)).toBe(false);
    });
    expect(await heldVersion(redis, t, ws)).toBe(1);
    expect(JSON.parse((await redis.get(`${prefix()}:key:${sha256(during.plaintext)}`))!)).toMatchObject({ key_id: during.key_id, status: 'active' });
    expect(await redis.exists(`${prefix()}:key:${sha256(before.plaintext)}`)).toBe(0);

    // Nothing secret reached a log line (the app logs at debug here) or an audit detail.
    const logs = logged.join('');
    expect(logs).toContain('deferred');
    // One line when the outage starts, one when it ends, however many reconnection attempts failed.
    expect(logs.split('redis unavailable').length - 1).toBe(1);
    expect(logs.split('redis available again').length - 1).toBe(1);
    const audits = JSON.stringify(await t.db.query(`SELECT detail FROM audit_events`));
    for (const secret of [before.plaintext, during.plaintext, sha256(before.plaintext), sha256(during.plaintext)]) {
      expect(logs).not.toContain(secret);
      expect(audits).not.toContain(secret);
    }
  });

  it('gives up on a Redis that keeps its connections but stops answering, after the command deadline', async () => {
    proxy.hold();
    let during: { key_id: string; plaintext: string };
    try {
      const started = Date.now();
      during = (await mint('while-held')).body;
      const took = Date.now() - started;
      expect(took).toBeGreaterThanOrEqual(REDIS_TIMEOUT_MS);
      expect(took).toBeLessThan(REDIS_TIMEOUT_MS + 3000);
      expect(await pending(during.key_id)).toBe(true);
      // The internal lookup reads PostgreSQL, whatever the hot path does.
      expect((await lookup(during.plaintext)).body).toMatchObject({ key_id: during.key_id, status: 'active' });
    } finally {
      proxy.release();
    }
    await eventually(async () => expect(await pending(during.key_id)).toBe(false));
    expect(JSON.parse((await redis.get(`${prefix()}:key:${sha256(during.plaintext)}`))!)).toMatchObject({ key_id: during.key_id, status: 'active' });
  });
});
