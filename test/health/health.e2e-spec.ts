import { Operator, startTestApp, TestApp } from 'test/support/app';
import { REDIS_URL } from 'test/support/database';
import { eventually } from 'test/support/eventually';
import { GatewayStreams, usageEvent } from 'test/support/streams';
import { TcpProxy } from 'test/support/tcp-proxy';
import { unapplyLastMigration } from 'test/support/factories';

const up = { status: 'up' };
const unreachable = { status: 'down', message: 'unreachable' };

describe('liveness and readiness with Redis', () => {
  // The app reaches Redis through a TCP proxy: stopping it takes the Redis server away (connections
  // cut, new ones refused); starting it again brings Redis back on the same address.
  let proxy: TcpProxy;
  let t: TestApp;
  let gw: GatewayStreams;
  let owner: Operator;

  const readyBody = (pending = { receipts: 0, usage: 0 }) => {
    const components = { database: up, migrations: up, redis: up, streams: { status: 'up', pending } };
    return { status: 'ok', info: components, error: {}, details: components };
  };
  const expectLive = async () => expect((await t.http().get('/healthz').expect(200)).body).toEqual({ ok: true });

  beforeAll(async () => {
    proxy = await TcpProxy.start(REDIS_URL);
    // Redis is away before the process starts: REDIS_URL points at a closed port.
    await proxy.stop();
    t = await startTestApp({ REDIS_URL: proxy.url, READY_STREAM_BACKLOG_MAX: '1' });
    gw = new GatewayStreams(t);
  });
  afterAll(async () => {
    gw.close();
    await t.close();
    await proxy.stop();
  });

  it('starts with Redis away: writes succeed, publication stays pending, not ready naming redis, alive', async () => {
    owner = await t.signIn();
    const [row] = await t.db.query(`SELECT snapshot_version, published_version FROM workspaces WHERE id = $1`, [owner.workspaceId]);
    expect(row).toEqual({ snapshot_version: 1, published_version: 0 });

    const res = await t.http().get('/readyz').expect(503);
    expect(res.body).toEqual({
      status: 'error',
      info: { database: up, migrations: up },
      error: { redis: unreachable, streams: unreachable },
      details: { database: up, migrations: up, redis: unreachable, streams: unreachable },
    });
    await expectLive();
  });

  it('is ready once Redis answers, in terminus shape, uncached', async () => {
    await proxy.start();
    const res = await eventually(() => t.http().get('/readyz').expect(200));
    expect(res.body).toEqual(readyBody());
    expect(res.headers['cache-control']).toBe('no-cache, no-store, must-revalidate');
  });

  it('answers 503 naming redis when Redis goes away, stays alive, and is ready again when it is back', async () => {
    await proxy.stop();
    const res = await t.http().get('/readyz').expect(503);
    expect(res.body.status).toBe('error');
    expect(res.body.error).toEqual({ redis: unreachable, streams: unreachable });
    expect(res.body.info).toEqual({ database: up, migrations: up });
    await expectLive();

    await proxy.start();
    expect((await eventually(() => t.http().get('/readyz').expect(200))).body).toEqual(readyBody());
  });

  it('answers 503 naming migrations while a migration of the code is not applied', async () => {
    const restore = await unapplyLastMigration(t);
    try {
      const res = await t.http().get('/readyz').expect(503);
      expect(res.body.error).toEqual({ migrations: { status: 'down', message: 'migrations pending' } });
      expect(res.body.info).toEqual({ database: up, redis: up, streams: { status: 'up', pending: { receipts: 0, usage: 0 } } });
      await expectLive();
    } finally {
      await restore();
    }
    expect((await t.http().get('/readyz').expect(200)).body).toEqual(readyBody());
  });

  it('answers 503 naming streams while more entries than READY_STREAM_BACKLOG_MAX are pending, ready once they are projected', async () => {
    await gw.pass('usage'); // creates the consumer group
    await gw.add('usage', usageEvent(owner.workspaceId), usageEvent(owner.workspaceId));
    // A consumer that read both entries and crashed before acknowledging them.
    await gw.redis.xReadGroup('control', 'crashed', { key: gw.key('usage'), id: '>' }, { COUNT: 10 });
    expect(await gw.pending('usage')).toBe(2);

    const res = await t.http().get('/readyz').expect(503);
    expect(res.body.error).toEqual({ streams: { status: 'down', message: 'backlog over READY_STREAM_BACKLOG_MAX', pending: { receipts: 0, usage: 2 } } });
    expect(res.body.info).toEqual({ database: up, migrations: up, redis: up });
    await expectLive();

    await gw.pass('usage', { claimIdleMs: 0 });
    expect(await gw.pending('usage')).toBe(0);
    expect((await t.http().get('/readyz').expect(200)).body).toEqual(readyBody());
  });
});

describe('readiness without Redis', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ REDIS_URL: undefined });
  });
  afterAll(() => t.close());

  it('checks only PostgreSQL and the migrations', async () => {
    const res = await t.http().get('/readyz').expect(200);
    const components = { database: up, migrations: up };
    expect(res.body).toEqual({ status: 'ok', info: components, error: {}, details: components });
    expect((await t.http().get('/healthz').expect(200)).body).toEqual({ ok: true });
  });
});
