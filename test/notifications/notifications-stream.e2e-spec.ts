import { INestApplication } from '@nestjs/common';
import { AddressInfo } from 'node:net';
import { createClient } from 'redis';
import { createControlClient, NotificationEvent } from 'clients/typescript/src/index';
import { createApp } from 'src/bootstrap';
import { TcpProxy } from 'test/support/tcp-proxy';
import { NotificationsJob } from 'src/modules/notifications/notifications.job';
import { StreamsService } from 'src/modules/streams/streams.service';
import { bearer, Operator, startTestApp, TestApp } from 'test/support/app';
import { REDIS_URL } from 'test/support/database';
import { eventually } from 'test/support/eventually';
import { endpointUrlUnchecked } from 'test/support/factories';
import { Receiver } from 'test/support/receiver';
import { GatewayStreams, usageEvent } from 'test/support/streams';

interface SseEvent {
  id: string;
  event: string;
  data: string;
}

/** A real client of the event stream: fetch streaming, the SSE fields parsed line by line. */
class StreamReader {
  readonly events: SseEvent[] = [];
  comments = 0;
  ended = false;
  private readonly abort = new AbortController();

  static async open(url: string, headers: Record<string, string>): Promise<StreamReader> {
    const reader = new StreamReader();
    const res = await fetch(url, { headers, signal: reader.abort.signal });
    if (res.status !== 200) throw new Error(`stream answered ${res.status}: ${await res.text()}`);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    void reader.read(res.body!.getReader());
    return reader;
  }

  private async read(body: ReadableStreamDefaultReader<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for (;;) {
        const { done, value } = await body.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (block.startsWith(':')) {
            this.comments++;
            continue;
          }
          const fields = Object.fromEntries(block.split('\n').map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 2)]));
          this.events.push(fields as unknown as SseEvent);
        }
      }
    } catch {
      // aborted by close()
    }
    this.ended = true;
  }

  close(): void {
    this.abort.abort();
  }
}

describe('notifications: the event stream across instances, SSRF refusals, budget thresholds', () => {
  let t: TestApp;
  let second: INestApplication;
  let url1: string;
  let url2: string;
  let owner: Operator;
  const readers: StreamReader[] = [];
  const receivers: Receiver[] = [];

  const urlOf = (app: INestApplication) => `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
  /** Another instance on the first one's database and Redis prefix (a replica), listening. */
  const startReplica = async (poolSize: number) => {
    const app = await createApp(t.config, { url: t.config.databaseUrl!, poolSize, stop: async () => undefined }, { jobs: false });
    await app.listen(0, '127.0.0.1');
    return app;
  };

  beforeAll(async () => {
    // Private targets refused (the default): only http is allowed, for local receivers.
    t = await startTestApp({ NOTIFY_ALLOW_HTTP: '1' });
    second = await startReplica(5);
    await t.app.listen(0, '127.0.0.1');
    url1 = urlOf(t.app);
    url2 = urlOf(second);
    owner = await t.signIn();
  });
  afterAll(async () => {
    for (const r of readers) r.close();
    for (const r of receivers) await r.stop();
    await second.close();
    await t.close();
  });

  const open = async (base: string, op: Operator, query = '', headers: Record<string, string> = {}) => {
    const reader = await StreamReader.open(`${base}/api/v1/workspaces/${op.workspaceId}/events${query}`, { ...bearer(op), ...headers });
    readers.push(reader);
    return reader;
  };
  const endpoint = async (op: Operator, body: Record<string, unknown> = {}) =>
    (await t.http().post(`/api/v1/workspaces/${op.workspaceId}/notification-endpoints`).set(bearer(op)).send({ url: 'https://93.184.216.34/hook', event_types: ['*'], ...body }).expect(201)).body;
  /** A test ping committed through the instance at `base`: its message id. */
  const ping = async (base: string, op: Operator, endpointId: string): Promise<string> => {
    const res = await fetch(`${base}/api/v1/workspaces/${op.workspaceId}/notification-endpoints/${endpointId}/test`, { method: 'POST', headers: bearer(op) });
    expect(res.status).toBe(202);
    return ((await res.json()) as { message_id: string }).message_id;
  };
  const pingThroughSecond = (op: Operator, endpointId: string) => ping(url2, op, endpointId);
  /** The ids of the messages published on Redis from now on (a raw subscriber of the data channel). */
  const watchPublished = async () => {
    const spy = createClient({ url: REDIS_URL });
    await spy.connect();
    const ids: string[] = [];
    await spy.subscribe(`${t.config.redisPrefix}:notifications`, (text) => ids.push((JSON.parse(text) as { id: string }).id));
    return { ids, stop: () => spy.quit() };
  };

  describe('the event stream', () => {
    it('delivers a message committed on one instance to a stream held on the other within a second', async () => {
      const op = await t.signIn();
      const e = await endpoint(op);
      const reader = await open(url1, op);
      const started = Date.now();
      const id = await pingThroughSecond(op, e.endpoint_id);
      await eventually(async () => expect(reader.events).toHaveLength(1), 100, 10);
      expect(Date.now() - started).toBeLessThan(1000);
      expect(reader.events[0]).toEqual({ id, event: 'notification.test', data: expect.any(String) });
      expect(JSON.parse(reader.events[0].data)).toEqual({ type: 'notification.test', timestamp: expect.any(String), data: { endpoint_id: e.endpoint_id, workspace_id: op.workspaceId } });
      // Another workspace's stream sees nothing of it.
      const stranger = await t.signIn();
      const theirs = await open(url1, stranger);
      await pingThroughSecond(op, e.endpoint_id);
      await eventually(async () => expect(reader.events).toHaveLength(2));
      expect(theirs.events).toHaveLength(0);
    });

    it('resumes after Last-Event-ID (or after=), replaying what the outbox holds, then goes on live', async () => {
      const op = await t.signIn();
      const e = await endpoint(op);
      const ids = [await pingThroughSecond(op, e.endpoint_id), await pingThroughSecond(op, e.endpoint_id), await pingThroughSecond(op, e.endpoint_id)];
      const resumed = await open(url2, op, '', { 'Last-Event-ID': ids[0] });
      await eventually(async () => expect(resumed.events.map((x) => x.id)).toEqual(ids.slice(1)));
      const byQuery = await open(url1, op, `?after=${ids[1]}`);
      await eventually(async () => expect(byQuery.events.map((x) => x.id)).toEqual(ids.slice(2)));
      const next = await pingThroughSecond(op, e.endpoint_id);
      await eventually(async () => expect(byQuery.events.map((x) => x.id)).toEqual([ids[2], next]));
      const fresh = await open(url1, op);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(fresh.events).toHaveLength(0);
    });

    it('publishes a commit to Redis only while a stream of its workspace is open on some instance, which every instance learns', async () => {
      const op = await t.signIn();
      const e = await endpoint(op);
      const elsewhere = await t.signIn();
      const other = await endpoint(elsewhere);
      const { ids: published, stop } = await watchPublished();
      /** Whether a ping through `base` was published (the publish is sent before the answer, after the commit). */
      const publishedPing = async (base: string, who: Operator, endpointId: string) => {
        const id = await ping(base, who, endpointId);
        await new Promise((resolve) => setTimeout(resolve, 150));
        return published.includes(id);
      };
      let third: INestApplication | undefined;
      try {
        // Nobody holds a stream of the workspace: once the instances have heard each other, nothing is published.
        await eventually(async () => expect(await publishedPing(url2, op, e.endpoint_id)).toBe(false), 20);
        // A stream opens on the first instance: a message the second commits right after is published and arrives.
        const reader = await open(url1, op);
        const id = await pingThroughSecond(op, e.endpoint_id);
        await eventually(async () => expect(reader.events.map((x) => x.id)).toEqual([id]));
        expect(published).toContain(id);
        // An instance started now asks who listens: once it knows (it stops publishing another workspace's
        // messages), it publishes this workspace's, which the stream on the first instance receives.
        third = await startReplica(2);
        const url3 = urlOf(third);
        await eventually(async () => expect(await publishedPing(url3, elsewhere, other.endpoint_id)).toBe(false), 20);
        const fromThird = await ping(url3, op, e.endpoint_id);
        await eventually(async () => expect(reader.events.map((x) => x.id)).toEqual([id, fromThird]));
        // The stream closes: every instance forgets it at once (well before a lapse), and publishes nothing again.
        reader.close();
        for (const base of [url2, url3]) await eventually(async () => expect(await publishedPing(base, op, e.endpoint_id)).toBe(false), 10);
      } finally {
        await third?.close();
        await stop();
      }
    });

    it('keeps publishing every commit while a registered replica has not answered its hello', async () => {
      const elsewhere = await t.signIn();
      const other = await endpoint(elsewhere);
      const redis = createClient({ url: REDIS_URL });
      await redis.connect();
      const { ids: published, stop } = await watchPublished();
      // A replica registered with a live lease whose subscription never answers (stalled, or not subscribed yet).
      const registry = `${t.config.redisPrefix}:notifications:replicas`;
      await redis.hSet(registry, 'silent-replica', String(Date.now() + 60_000));
      let late: INestApplication | undefined;
      try {
        late = await startReplica(2);
        const base = urlOf(late);
        // Past the wait for answers (1 s), the new instance still does not know all, so it publishes what nobody watches.
        await new Promise((resolve) => setTimeout(resolve, 1500));
        const id = await ping(base, elsewhere, other.endpoint_id);
        await eventually(async () => expect(published).toContain(id));
      } finally {
        await redis.hDel(registry, 'silent-replica');
        await late?.close();
        await stop();
        await redis.quit();
      }
    });

    it('filters by types; audit.event appears only when named', async () => {
      const op = await t.signIn();
      const keys = await open(url1, op, '?types=key.*');
      const audits = await open(url1, op, '?types=audit.event');
      const everything = await open(url1, op, '?types=*');
      const key = (await t.http().post(`/api/v1/workspaces/${op.workspaceId}/keys`).set(bearer(op)).send({ agent_id: 'a' }).expect(201)).body;
      await t.http().post(`/api/v1/workspaces/${op.workspaceId}/keys/${key.key_id}/revoke`).set(bearer(op)).send({}).expect(200);
      await eventually(async () => expect(keys.events.map((x) => x.event)).toEqual(['key.revoked']));
      await eventually(async () => expect(audits.events.map((x) => JSON.parse(x.data).data.action)).toEqual(['key.mint', 'key.revoke']));
      await eventually(async () => expect(everything.events.map((x) => x.event)).toEqual(['key.revoked']));
      const bad = await t.http().get(`/api/v1/workspaces/${op.workspaceId}/events?types=key.*,nope`).set(bearer(op));
      expect([bad.status, bad.body]).toEqual([422, { detail: [{ loc: ['query', 'types'], msg: 'types must be comma-separated event types or prefix.* patterns', type: 'value_error' }] }]);
      const anonymous = await t.http().get(`/api/v1/workspaces/${op.workspaceId}/events`);
      expect([anonymous.status, anonymous.body]).toEqual([401, { detail: 'session required' }]);
      const stranger = await t.signIn();
      const foreign = await t.http().get(`/api/v1/workspaces/${op.workspaceId}/events`).set(bearer(stranger));
      expect([foreign.status, foreign.body]).toEqual([404, { detail: 'workspace not found' }]);
    });

    it('stops a removed member stream within a few seconds', async () => {
      const op = await t.signIn();
      const viewer = await t.member(op, 'viewer');
      const reader = await open(url2, viewer);
      await t.http().delete(`/api/v1/workspaces/${op.workspaceId}/members/${viewer.userId}`).set(bearer(op)).expect(204);
      await eventually(async () => expect(reader.ended).toBe(true), 50, 100);
    });
  });

  describe("the client's events()", () => {
    it('iterates the stream through the real server and resumes from the last id after the connection drops', async () => {
      const op = await t.signIn();
      const e = await endpoint(op);
      const proxy = await TcpProxy.start(url1);
      const client = createControlClient({ baseUrl: `http://127.0.0.1:${proxy.port}`, getToken: () => op.token });
      const controller = new AbortController();
      const seen: NotificationEvent[] = [];
      const reading = (async () => {
        for await (const message of client.events(op.workspaceId, { types: ['notification.*'], signal: controller.signal, retryMs: 200 })) seen.push(message);
      })();
      try {
        await new Promise((resolve) => setTimeout(resolve, 300));
        const first = await pingThroughSecond(op, e.endpoint_id);
        await eventually(async () => expect(seen.map((m) => m.id)).toEqual([first]));
        expect(seen[0]).toEqual({ id: first, type: 'notification.test', timestamp: expect.any(String), data: { endpoint_id: e.endpoint_id, workspace_id: op.workspaceId } });
        // The connection drops; two messages commit while the client is away; it comes back.
        await proxy.stop();
        const missed = [await pingThroughSecond(op, e.endpoint_id), await pingThroughSecond(op, e.endpoint_id)];
        await proxy.start();
        await eventually(async () => expect(seen.map((m) => m.id)).toEqual([first, ...missed]));
        const live = await pingThroughSecond(op, e.endpoint_id);
        await eventually(async () => expect(seen.map((m) => m.id)).toEqual([first, ...missed, live]));
      } finally {
        controller.abort();
        await reading;
        await proxy.stop();
      }
      // A refusal is final: a non-member's iterator rejects with the 404.
      const stranger = await t.signIn();
      const theirs = createControlClient({ baseUrl: url1, getToken: () => stranger.token }).events(op.workspaceId);
      await expect(theirs.next()).rejects.toMatchObject({ status: 404, detail: 'workspace not found' });
    });
  });

  describe('targets (no SSRF)', () => {
    it.each([
      'http://127.0.0.1/hook',
      'http://127.1/hook',
      'http://10.1.2.3/',
      'http://172.16.0.1/',
      'http://172.31.255.255/',
      'http://192.168.1.1/',
      'http://169.254.169.254/latest/meta-data',
      'http://100.64.0.1/',
      'http://100.127.255.254/',
      'http://0.0.0.0/',
      'http://224.0.0.1/',
      'http://255.255.255.255/',
      'http://[::1]/',
      'http://[::]/',
      'http://[::ffff:127.0.0.1]/',
      'http://[::ffff:a9fe:a9fe]/',
      'http://[fc00::1]/',
      'http://[fd12:3456::1]/',
      'http://[fe80::1]/',
      'http://[ff02::1]/',
      'http://2130706433/',
      'http://0177.0.0.1/',
      'http://0x7f.0.0.1/',
      'http://017700000001/',
      'http://localhost:8080/hook',
    ])('refuses %s at create and update (422 naming url)', async (target) => {
      const ws = owner.workspaceId;
      const res = await t.http().post(`/api/v1/workspaces/${ws}/notification-endpoints`).set(bearer(owner)).send({ url: target, event_types: ['*'] });
      expect([res.status, res.body]).toEqual([422, { detail: [{ loc: ['body', 'url'], msg: 'url must not point to a private or local address', type: 'value_error' }] }]);
    });

    it('accepts a public address, refuses a private one on PATCH, and refuses at delivery after resolving (refused_target, nothing sent)', async () => {
      const op = await t.signIn();
      const r = await Receiver.start();
      receivers.push(r);
      const e = await endpoint(op);
      const path = `/api/v1/workspaces/${op.workspaceId}/notification-endpoints/${e.endpoint_id}`;
      const patched = await t.http().patch(path).set(bearer(op)).send({ url: r.url, expected_revision: 1 });
      expect([patched.status, patched.body.detail?.[0]?.msg]).toEqual([422, 'url must not point to a private or local address']);
      // As if the name had resolved elsewhere when it was checked: the attempt checks again.
      for (const [i, target] of [`http://127.0.0.1:${r.port}/hook`, `http://localhost:${r.port}/hook`, `http://[::ffff:127.0.0.1]:${r.port}/hook`].entries()) {
        await endpointUrlUnchecked(t, op.workspaceId, e.endpoint_id, target);
        await t.http().post(`${path}/test`).set(bearer(op)).expect(202);
        await eventually(async () => {
          const { attempts } = (await t.http().get(`${path}/attempts`).set(bearer(op)).expect(200)).body;
          expect(attempts).toHaveLength(i + 1);
          expect(attempts[0]).toMatchObject({ status: 'failed', error: 'refused_target', response_status: null });
        });
      }
      expect(r.received).toHaveLength(0);
    });
  });

  describe('budget thresholds from ingestion', () => {
    it('emits 50, 80 and 100% once per key and month, counting each event_id once, under redelivery and concurrent passes', async () => {
      const op = await t.signIn();
      const ws = op.workspaceId;
      const gw = new GatewayStreams(t);
      try {
        const key = (await t.http().post(`/api/v1/workspaces/${ws}/keys`).set(bearer(op)).send({ agent_id: 'spender', budget_micros_usd_month: 1000 }).expect(201)).body;
        const now = new Date().toISOString();
        const event = (usd: number, over: Record<string, unknown> = {}) => usageEvent(ws, { key_id: key.key_id, usd_micros: usd, occurred_at: now, ...over });
        const first = event(450);
        await gw.add('usage', first, first, event(999, { pricing_status: 'unknown' }));
        await gw.pass('usage');
        expect(await t.db.query(`SELECT 1 FROM notification_messages WHERE workspace_id = $1 AND type = 'budget.threshold_crossed'`, [ws])).toEqual([]);
        await gw.add('usage', event(100), first);
        await gw.pass('usage');
        await gw.add('usage', event(300), event(200));
        // Two instances consume at once.
        await Promise.all([gw.pass('usage'), second.get(StreamsService).pass('usage')]);
        await gw.add('usage', event(5));
        await gw.pass('usage');
        const rows: { body: string }[] = await t.db.query(`SELECT body FROM notification_messages WHERE workspace_id = $1 AND type = 'budget.threshold_crossed' ORDER BY seq`, [ws]);
        const data = rows.map((r) => JSON.parse(r.body).data);
        const month = new Date();
        const from = new Date(Date.UTC(month.getUTCFullYear(), month.getUTCMonth(), 1)).toISOString();
        const to = new Date(Date.UTC(month.getUTCFullYear(), month.getUTCMonth() + 1, 1)).toISOString();
        const base = { key_id: key.key_id, agent_id: 'spender', cap_usd_micros: 1000, period: { from, to }, workspace_id: ws };
        expect(data).toEqual([
          { ...base, threshold_percent: 50, spent_usd_micros: 550 },
          { ...base, threshold_percent: 80, spent_usd_micros: 1050 },
          { ...base, threshold_percent: 100, spent_usd_micros: 1050 },
        ]);
      } finally {
        gw.close();
      }
    });

    it('emits a crossing once in its month also after its message is older than retention: the purge keeps it until the month ends', async () => {
      const op = await t.signIn();
      const ws = op.workspaceId;
      const gw = new GatewayStreams(t);
      try {
        const key = (await t.http().post(`/api/v1/workspaces/${ws}/keys`).set(bearer(op)).send({ agent_id: 'spender', budget_micros_usd_month: 1000 }).expect(201)).body;
        const event = (usd: number) => usageEvent(ws, { key_id: key.key_id, usd_micros: usd, occurred_at: new Date().toISOString() });
        const crossings = () => t.db.query(`SELECT id FROM notification_messages WHERE workspace_id = $1 AND type = 'budget.threshold_crossed'`, [ws]);
        await gw.add('usage', event(600));
        await gw.pass('usage');
        const [crossed] = await crossings();
        // As if it had been emitted on the 1st of a 31-day month and this were the 31st.
        await t.db.query(`UPDATE notification_messages SET created_at = created_at - make_interval(days => $2) WHERE id = $1`, [crossed.id, t.config.notify.retentionDays + 1]);
        await t.app.get(NotificationsJob).purge();
        await gw.add('usage', event(10));
        await gw.pass('usage');
        expect(await crossings()).toEqual([crossed]);
      } finally {
        gw.close();
      }
    });
  });
});
