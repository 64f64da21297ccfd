import { INestApplication } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { Client } from 'pg';
import { createClient, RedisClientType } from 'redis';
import request from 'supertest';
import { signServiceToken } from 'src/platform/auth/service-token';
import { createApp } from 'src/bootstrap';
import { loadConfig } from 'src/config/config';
import { REDIS } from 'src/database/redis.module';
import { KeysService } from 'src/modules/keys/keys.service';
import { FRESH_MS, PendingRemovals } from 'src/modules/keys/pending-removals';
import { bearer, Operator, SERVICE_SECRET, startTestApp, TestApp } from 'test/support/app';
import { REDIS_URL } from 'test/support/database';
import { eventually } from 'test/support/eventually';
import { TcpProxy } from 'test/support/tcp-proxy';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const PLANTED = 'planted-in-redis';

/** A second control process on the same database and hot path (another replica), Redis reached directly. */
async function startReplica(t: TestApp): Promise<INestApplication> {
  const config = loadConfig({
    DATABASE_URL: t.config.databaseUrl,
    REDIS_URL,
    REDIS_PREFIX: t.config.redisPrefix,
    IDENTITY_ISSUER: t.issuer.url,
    SERVICE_JWT_SECRET: SERVICE_SECRET,
    LOG_LEVEL: 'error',
    DATABASE_POOL_SIZE: '3',
    HTTP_PLATFORM: process.env.HTTP_PLATFORM,
  });
  const app = await createApp(config, { url: config.databaseUrl!, poolSize: config.databasePoolSize, stop: () => Promise.resolve() }, { jobs: false });
  await app.init();
  if (config.httpPlatform === 'fastify') await (app.getHttpAdapter().getInstance() as { ready(): Promise<unknown> }).ready();
  return app;
}

/**
 * The internal key lookup serves the Redis copy unless a removal of the digest is pending, and keeps
 * the revocation guarantee on every replica (docs/decisions.md, "The internal key lookup serves the
 * hot path again"). Replica A reaches Redis through a proxy the suite can take away; replica B, on
 * the same database and Redis prefix, reaches Redis directly. No sync job runs on either.
 */
describe('internal key lookup from the hot path, across replicas', () => {
  let proxy: TcpProxy;
  let a: TestApp;
  let b: INestApplication;
  let redis: RedisClientType;
  let owner: Operator;

  beforeAll(async () => {
    proxy = await TcpProxy.start(REDIS_URL);
    a = await startTestApp({ REDIS_URL: proxy.url }, { jobs: false });
    b = await startReplica(a);
    redis = createClient({ url: REDIS_URL });
    await redis.connect();
    owner = await a.signIn();
  });
  afterAll(async () => {
    redis.destroy();
    await b.close();
    await a.close();
    await proxy.stop();
  });

  const hotName = (plaintext: string) => `${a.config.redisPrefix}:key:${sha256(plaintext)}`;
  const mint = async (agent: string) =>
    (await a.http().post(`/api/v1/workspaces/${owner.workspaceId}/keys`).set(bearer(owner)).send({ agent_id: agent }).expect(201)).body as { key_id: string; plaintext: string };
  const lookup = async (app: INestApplication, plaintext: string) =>
    request(app.getHttpServer())
      .get(`/internal/v1/keys/${sha256(plaintext)}`)
      .set('Authorization', `Bearer ${await signServiceToken(SERVICE_SECRET, 'gateway', 'control')}`);
  /** Rewrites a key's Redis copy with a recognisable agent_id: an answer carrying it came from Redis, not PostgreSQL. */
  const plant = async (plaintext: string) => {
    const stored = JSON.parse((await redis.get(hotName(plaintext)))!);
    await redis.set(hotName(plaintext), JSON.stringify({ ...stored, agent_id: PLANTED }));
  };

  it('answers the Redis copy as stored, and PostgreSQL when the hot path lacks the digest', async () => {
    const key = await mint('served-from-redis');
    await plant(key.plaintext);
    for (const app of [a.app, b]) {
      await eventually(async () => expect((await lookup(app, key.plaintext)).body).toMatchObject({ agent_id: PLANTED, status: 'active' }));
    }
    await redis.del(hotName(key.plaintext));
    expect((await lookup(b, key.plaintext)).body).toMatchObject({ agent_id: 'served-from-redis', status: 'active' });
  });

  it('never answers active on another replica after a revoke whose Redis delete failed, with Redis back before any sync', async () => {
    const key = await mint('revoked-in-outage');
    const rotated = await mint('rotated-in-outage');
    const witness = await mint('witness');
    await plant(witness.plaintext);
    await eventually(async () => expect((await lookup(b, witness.plaintext)).body.agent_id).toBe(PLANTED));
    expect((await lookup(b, key.plaintext)).body.status).toBe('active');

    await proxy.stop();
    // Replica B looks the key up all along; every lookup sent after the revoke's 200 must answer revoked.
    let answeredAt = Infinity;
    let polling = true;
    const seen: { sentAt: number; status: string }[] = [];
    const poller = (async () => {
      while (polling) {
        const sentAt = performance.now();
        seen.push({ sentAt, status: (await lookup(b, key.plaintext)).body.status });
      }
    })();
    await a.http().post(`/api/v1/workspaces/${owner.workspaceId}/keys/${key.key_id}/revoke`).set(bearer(owner)).expect(200);
    answeredAt = performance.now();
    const replaced = (await a.http().post(`/api/v1/workspaces/${owner.workspaceId}/keys/${rotated.key_id}/rotate`).set(bearer(owner)).send({ grace_seconds: 0 }).expect(200)).body;
    await proxy.start();
    // At once, on the other replica: Redis still holds the active copies, the lookup does not answer them.
    const stale = JSON.parse((await redis.get(hotName(key.plaintext)))!);
    expect(stale.status).toBe('active');
    expect(JSON.parse((await redis.get(hotName(rotated.plaintext)))!).valid_until).toBeNull();
    expect((await lookup(b, key.plaintext)).body).toMatchObject({ key_id: key.key_id, status: 'revoked' });
    expect((await lookup(b, rotated.plaintext)).status).toBe(404);
    expect((await lookup(b, replaced.plaintext)).body).toMatchObject({ key_id: rotated.key_id, status: 'active', valid_until: null });
    polling = false;
    await poller;
    const after = seen.filter((s) => s.sentAt > answeredAt);
    expect(after.length).toBeGreaterThan(0);
    expect(after.filter((s) => s.status !== 'revoked')).toEqual([]);
    // Replica B was serving Redis all along for digests with nothing pending.
    expect((await lookup(b, witness.plaintext)).body.agent_id).toBe(PLANTED);
    expect((await lookup(a.app, key.plaintext)).body.status).toBe('revoked');

    // A third replica started now loads the pending removals before serving anything from Redis.
    const c = await startReplica(a);
    try {
      expect((await lookup(c, key.plaintext)).body.status).toBe('revoked');
      await eventually(async () => expect((await lookup(c, witness.plaintext)).body.agent_id).toBe(PLANTED));
      expect((await lookup(c, key.plaintext)).body.status).toBe('revoked');
      expect((await lookup(c, rotated.plaintext)).status).toBe(404);
    } finally {
      await c.close();
    }

    // Once the sync lands the removals, the digests leave the set and Redis no longer holds them (the
    // job's pass repeats until replica A's Redis connection, cut by the proxy, is back).
    await eventually(async () => {
      await a.app.get(KeysService).reconcile();
      expect(await redis.exists(hotName(key.plaintext))).toBe(0);
    });
    expect((await lookup(b, key.plaintext)).body.status).toBe('revoked');
  });

  it('a revoke whose Redis delete failed answers only after FRESH_MS: the window in which a replica could still serve the copy', async () => {
    const key = await mint('outwaited');
    await proxy.stop();
    try {
      const started = performance.now();
      await a.http().post(`/api/v1/workspaces/${owner.workspaceId}/keys/${key.key_id}/revoke`).set(bearer(owner)).expect(200);
      expect(performance.now() - started).toBeGreaterThanOrEqual(FRESH_MS);
    } finally {
      await proxy.start();
    }
    // With Redis up (for A too, once its client has reconnected) the delete lands and the answer does not wait.
    await eventually(async () => expect(a.app.get<RedisClientType>(REDIS).isReady).toBe(true));
    const other = await mint('not-outwaited');
    await eventually(async () => expect(await redis.exists(hotName(other.plaintext))).toBe(1));
    const started = performance.now();
    await a.http().post(`/api/v1/workspaces/${owner.workspaceId}/keys/${other.key_id}/revoke`).set(bearer(owner)).expect(200);
    expect(performance.now() - started).toBeLessThan(FRESH_MS);
    expect(await redis.exists(hotName(other.plaintext))).toBe(0);
  });

  it('reads PostgreSQL while its notification connection is down or catching up, and Redis again once caught up', async () => {
    const key = await mint('listener-drop');
    await plant(key.plaintext);
    await eventually(async () => expect((await lookup(b, key.plaintext)).body.agent_id).toBe(PLANTED));
    const listener = b.get(PendingRemovals).channel;
    const admin = new Client({ connectionString: a.config.databaseUrl });
    await admin.connect();
    try {
      // The reconnected listener cannot load the set while this lock is held: it stays catching up.
      await admin.query('BEGIN');
      await admin.query('LOCK TABLE virtual_key_removals IN ACCESS EXCLUSIVE MODE');
      const killed = await admin.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1`,
        [listener],
      );
      expect(killed.rowCount).toBe(1);
      await eventually(async () => expect((await lookup(b, key.plaintext)).body.agent_id).toBe('listener-drop'));
      // Reconnected and waiting on the lock to load.
      await eventually(async () => {
        // Read outside the locking transaction, whose view of pg_stat_activity is fixed at its start.
        const rows = await a.db.query(`SELECT wait_event_type FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1`, [listener]);
        expect(rows).toEqual([{ wait_event_type: 'Lock' }]);
      });
      const until = performance.now() + FRESH_MS * 1.5;
      while (performance.now() < until) {
        expect((await lookup(b, key.plaintext)).body).toMatchObject({ agent_id: 'listener-drop', status: 'active' });
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await admin.query('ROLLBACK');
      await eventually(async () => expect((await lookup(b, key.plaintext)).body.agent_id).toBe(PLANTED));
    } finally {
      await admin.query('ROLLBACK').catch(() => undefined);
      await admin.end();
    }
  });
});
