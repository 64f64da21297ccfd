import { createHash } from 'node:crypto';
import { createClient, createCluster, RedisClientType, RedisClusterType } from 'redis';
import { signServiceToken } from 'src/platform/auth/service-token';
import { Redis, REDIS, redisReady, REDIS_TIMEOUT_MS } from 'src/database/redis.module';
import { KeysService } from 'src/modules/keys/keys.service';
import { PublicationService } from 'src/modules/publication/publication.service';
import { bearer, Operator, SERVICE_SECRET, startTestApp, TestApp } from 'test/support/app';
import { eventually } from 'test/support/eventually';
import { RedisCluster } from 'test/support/redis-cluster';
import { GatewayStreams, receiptRevision, usageEvent } from 'test/support/streams';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const up = { status: 'up' };
const unreachable = { status: 'down', message: 'unreachable' };

/**
 * The service on a three-master Redis Cluster (one replica each, for the failover), configured with
 * REDIS_CLUSTER_NODES as an operator would: the hot path, publication and its announcement, both
 * gateway streams, readiness and the outage rules. One cluster for the whole suite.
 */
describe('on a Redis Cluster', () => {
  let cluster: RedisCluster;
  let t: TestApp;
  /** The gateway's own connection to the cluster. */
  let redis: RedisClusterType;
  let gw: GatewayStreams;
  let owner: Operator;

  beforeAll(async () => {
    cluster = await RedisCluster.start({ masters: 3, replicas: 1 });
    t = await startTestApp({ REDIS_URL: undefined, REDIS_CLUSTER_NODES: cluster.seeds });
    redis = createCluster({ rootNodes: cluster.seeds.split(',').map((url) => ({ url })) });
    // A failed slot-map reload (after the crash below) is emitted as 'error': never fatal here.
    redis.on('error', () => undefined);
    await redis.connect();
    gw = new GatewayStreams(t, redis);
    owner = await t.signIn();
  }, 60_000);
  afterAll(async () => {
    gw?.close();
    await t?.close();
    await cluster?.stop();
  });

  const prefix = () => t.config.redisPrefix;
  const keys = (ws = owner.workspaceId) => `/api/v1/workspaces/${ws}/keys`;
  const mint = async (agent: string) => (await t.http().post(keys()).set(bearer(owner)).send({ agent_id: agent }).expect(201)).body as { key_id: string; plaintext: string };
  const hotKey = (plaintext: string) => `${prefix()}:key:${sha256(plaintext)}`;
  const hotPath = async (keyId: string) => (await t.http().get(`${keys()}/${keyId}`).set(bearer(owner)).expect(200)).body.hot_path as string;
  const lookup = async (plaintext: string) =>
    t.http().get(`/internal/v1/keys/${sha256(plaintext)}`).set('Authorization', `Bearer ${await signServiceToken(SERVICE_SECRET, 'gateway', 'control')}`).expect(200);
  const versions = async (ws: string) => (await t.db.query(`SELECT snapshot_version, published_version FROM workspaces WHERE id = $1`, [ws]))[0];
  const createWorkspace = async (slug: string) => (await t.http().post('/api/v1/workspaces').set(bearer(owner)).send({ org_id: owner.orgId, slug }).expect(201)).body.id as string;
  const masters = async (): Promise<number[]> => [...new Set(await Promise.all(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'].map(async (k) => (await cluster.shardOf(k)).master)))];

  it('mints, rotates, revokes and looks up keys whose hot-path entries live on every master', async () => {
    const minted: { key_id: string; plaintext: string }[] = [];
    const nodes = new Set<number>();
    while (nodes.size < 3) {
      const key = await mint(`agent-${minted.length}`);
      minted.push(key);
      nodes.add((await cluster.shardOf(hotKey(key.plaintext))).master);
    }
    for (const key of minted) {
      expect(await hotPath(key.key_id)).toBe('published');
      const internal = (await lookup(key.plaintext)).body;
      expect(JSON.parse((await redis.get(hotKey(key.plaintext)))!)).toEqual(internal);
    }

    const [first, second] = minted;
    const rotated = (await t.http().post(`${keys()}/${first.key_id}/rotate`).set(bearer(owner)).send({ grace_seconds: 3600 }).expect(200)).body as { plaintext: string };
    expect(JSON.parse((await redis.get(hotKey(rotated.plaintext)))!)).toMatchObject({ key_id: first.key_id, status: 'active' });
    expect(JSON.parse((await redis.get(hotKey(first.plaintext)))!)).toMatchObject({ key_id: first.key_id, valid_until: expect.any(String) });
    const ttl = await redis.pTTL(hotKey(first.plaintext));
    expect(ttl).toBeGreaterThan(3_500_000);
    expect(ttl).toBeLessThanOrEqual(3_600_000);

    await t.http().post(`${keys()}/${first.key_id}/revoke`).set(bearer(owner)).expect(200);
    await t.http().post(`${keys()}/${second.key_id}/revoke`).set(bearer(owner)).expect(200);
    for (const plaintext of [first.plaintext, rotated.plaintext, second.plaintext]) {
      expect(await redis.exists(hotKey(plaintext))).toBe(0);
      expect((await lookup(plaintext)).body.status).toBe('revoked');
    }
    expect(await hotPath(first.key_id)).toBe('removed');
    expect(await hotPath(second.key_id)).toBe('removed');
  });

  it('publishes a new workspace (pending to published) and its announcement reaches a subscriber on every node', async () => {
    const heard = new Map<number, string[]>();
    const subscribers: RedisClientType[] = [];
    for (const port of cluster.ports) {
      const subscriber: RedisClientType = createClient({ url: `redis://127.0.0.1:${port}` });
      await subscriber.connect();
      heard.set(port, []);
      await subscriber.subscribe(`${prefix()}:snapshots`, (message) => heard.get(port)!.push(message));
      subscribers.push(subscriber);
    }
    try {
      const ws = await createWorkspace('on-cluster');
      expect(await versions(ws)).toEqual({ snapshot_version: 1, published_version: 1 });
      const snapshot = JSON.parse((await redis.get(`${prefix()}:snapshot:${ws}`))!);
      expect(snapshot).toMatchObject({ workspace_id: ws, version: 1 });
      const announcement = `${ws}:1:${snapshot.integrity.digest}`;
      await eventually(async () => {
        for (const port of cluster.ports) expect(heard.get(port)).toContain(announcement);
      });
    } finally {
      for (const subscriber of subscribers) subscriber.destroy();
    }
  });

  it('projects both streams exactly once: reclaims an idle consumer\'s entries, parks malformed ones, reports the backlog', async () => {
    const ws = owner.workspaceId;
    const receipts = Array.from({ length: 30 }, () => receiptRevision(ws));
    const usage = Array.from({ length: 30 }, () => usageEvent(ws));
    // The first passes create the group (nothing to read yet).
    expect(await gw.pass('receipts')).toMatchObject({ projected: 0 });
    expect(await gw.pass('usage')).toMatchObject({ projected: 0 });
    await gw.add('receipts', ...receipts, 'not json');
    await gw.add('usage', ...usage, usageEvent('ws_unknown'));
    // A consumer that read five receipts and went away: they stay pending with it.
    const group = await redis.xReadGroup('control', 'gone', { key: gw.key('receipts'), id: '>' }, { COUNT: 5 });
    expect(group![0].messages).toHaveLength(5);

    const ready = await t.http().get('/readyz').expect(200);
    expect(ready.body.info).toEqual({ database: up, migrations: up, redis: up, streams: { status: 'up', pending: { receipts: 5, usage: 0 } } });

    const receiptPass = await gw.pass('receipts', { claimIdleMs: 0 });
    expect(receiptPass).toMatchObject({ reclaimed: 5, fresh: 26, projected: 30, parked: 1, failed: 0 });
    expect(await gw.pass('usage')).toMatchObject({ reclaimed: 0, fresh: 31, projected: 30, parked: 1, failed: 0 });
    expect(await gw.pending('receipts')).toBe(0);
    expect(await gw.pending('usage')).toBe(0);
    expect(await projected(ws)).toEqual({ receipts: 30, usage: 30 });
    expect(await t.db.query(`SELECT stream, reason FROM stream_parked ORDER BY stream`)).toEqual([
      { stream: 'receipts', reason: expect.any(String) },
      { stream: 'usage', reason: 'unknown workspace' },
    ]);
    // Nothing is delivered twice.
    expect(await gw.pass('receipts', { claimIdleMs: 0 })).toMatchObject({ reclaimed: 0, fresh: 0, projected: 0 });
  });

  it('survives a failover of the node holding a stream: nothing lost, nothing projected twice', async () => {
    const ws = owner.workspaceId;
    const before = await projected(ws);
    const key = gw.key('receipts');
    const { master } = await cluster.shardOf(key);
    await gw.add('receipts', ...Array.from({ length: 10 }, () => receiptRevision(ws)));
    // Three entries pending with a consumer that went away, across the failover.
    expect((await redis.xReadGroup('control', 'gone', { key, id: '>' }, { COUNT: 3 }))![0].messages).toHaveLength(3);
    // Another read by control's consumer itself, committed before the failover.
    expect(await gw.pass('receipts')).toMatchObject({ fresh: 7, projected: 7 });

    const promoted = await cluster.failover(key);
    expect(promoted).not.toBe(master);
    await gw.add('receipts', ...Array.from({ length: 10 }, () => receiptRevision(ws)));

    // The pending entries moved with the stream; the consumer follows the slot to the new master
    // (a pass cut off by the failover leaves its entries pending; the next one reclaims them).
    await eventually(async () => {
      await gw.pass('receipts', { claimIdleMs: 0 });
      expect(await gw.pending('receipts')).toBe(0);
    });
    expect(await projected(ws)).toEqual({ receipts: before.receipts + 20, usage: before.usage });
    expect(await gw.pass('receipts', { claimIdleMs: 0 })).toMatchObject({ reclaimed: 0, fresh: 0, projected: 0 });
    expect((await t.http().get('/readyz').expect(200)).body.info.streams).toEqual({ status: 'up', pending: { receipts: 0, usage: 0 } });
  });

  it('keeps the outage rules while the masters do not answer: writes commit, not ready, everything settles after', async () => {
    const before = await mint('before-outage');
    const ports = await masters();
    for (const port of ports) cluster.pause(port, true);
    let during: { key_id: string; plaintext: string };
    let ws: string;
    try {
      const started = Date.now();
      during = await mint('during-outage');
      expect(Date.now() - started).toBeLessThan(REDIS_TIMEOUT_MS + 3000);
      expect(await hotPath(during.key_id)).toBe('pending');
      // The internal lookup reads PostgreSQL, whatever the hot path does.
      expect((await lookup(during.plaintext)).body).toMatchObject({ key_id: during.key_id, status: 'active' });
      await t.http().post(`${keys()}/${before.key_id}/revoke`).set(bearer(owner)).expect(200);
      expect(await hotPath(before.key_id)).toBe('pending');
      ws = await createWorkspace('during-outage');
      expect(await versions(ws)).toEqual({ snapshot_version: 1, published_version: 0 });

      const res = await t.http().get('/readyz').expect(503);
      expect(res.body.error).toEqual({ redis: unreachable, streams: unreachable });
    } finally {
      for (const port of ports) cluster.pause(port, false);
    }
    await eventually(async () => {
      await t.app.get(KeysService).reconcile();
      await t.app.get(PublicationService).reconcile();
      expect(await hotPath(during.key_id)).toBe('published');
      expect(await hotPath(before.key_id)).toBe('removed');
      expect(await versions(ws)).toEqual({ snapshot_version: 1, published_version: 1 });
    });
    expect(JSON.parse((await redis.get(hotKey(during.plaintext)))!)).toMatchObject({ key_id: during.key_id, status: 'active' });
    expect(await redis.exists(hotKey(before.plaintext))).toBe(0);
    expect((await eventually(() => t.http().get('/readyz').expect(200))).body.status).toBe('ok');
  });

  // Last: it leaves the cluster one node short.
  it('recovers from a crashed master once its replica is promoted: the consumer and the hot path follow the slot', async () => {
    const ws = owner.workspaceId;
    const key = gw.key('usage');
    const before = await projected(ws);
    await gw.add('usage', ...Array.from({ length: 10 }, () => usageEvent(ws)));
    // The gateway waits for the replica to have its entries (replication is asynchronous).
    expect(await redis.sendCommand(key, false, ['WAIT', '1', '2000'])).toBe(1);
    const { master } = await cluster.shardOf(key);
    await cluster.kill(master);
    // What the key sync waits for: the connection says it is down, then (after the promotion) back.
    const control = t.app.get<Redis>(REDIS);
    await eventually(async () => expect(redisReady(control)).toBe(false));
    const promoted = await cluster.failover(key, { force: true });

    // Control's connections read the slot map again once the dead master stops answering.
    const pass = await eventually(() => gw.pass('usage'), 100, 200);
    expect(pass).toMatchObject({ projected: 10, failed: 0 });
    expect((await eventually(() => t.http().get('/readyz').expect(200), 100, 200)).body.info.redis).toEqual(up);
    await eventually(async () => expect(redisReady(control)).toBe(true));

    // A gateway connection made after the failover sees the new master too.
    const after: RedisClusterType = createCluster({ rootNodes: cluster.ports.filter((p) => p !== master).map((p) => ({ url: `redis://127.0.0.1:${p}` })) });
    after.on('error', () => undefined);
    await after.connect();
    try {
      const gateway = new GatewayStreams(t, after);
      await gateway.add('usage', ...Array.from({ length: 5 }, () => usageEvent(ws)));
      expect(await gateway.pass('usage')).toMatchObject({ projected: 5, failed: 0 });
      expect(await gateway.pending('usage')).toBe(0);
      expect(await projected(ws)).toEqual({ receipts: before.receipts, usage: before.usage + 10 + 5 });

      let landed = false;
      for (let i = 0; i < 30 && !landed; i++) {
        const minted = await mint(`after-crash-${i}`);
        expect(await hotPath(minted.key_id)).toBe('published');
        expect(JSON.parse((await after.get(hotKey(minted.plaintext)))!)).toMatchObject({ key_id: minted.key_id, status: 'active' });
        landed = (await cluster.shardOf(hotKey(minted.plaintext))).master === promoted;
      }
      expect(landed).toBe(true);
    } finally {
      after.destroy();
    }
  });

  /** Rows projected for the workspace, per stream. */
  async function projected(ws: string): Promise<{ receipts: number; usage: number }> {
    const [row] = await t.db.query(
      `SELECT (SELECT count(*)::int FROM receipt_revisions WHERE workspace_id = $1) AS receipts, (SELECT count(*)::int FROM usage_events WHERE workspace_id = $1) AS usage`,
      [ws],
    );
    return row;
  }
});
