import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { ApprovalEvents } from 'src/modules/approvals/approval-events.service';
import { AuditService } from 'src/modules/audit/audit.service';
import { Transactions } from 'src/database/transactions';
import { KeyExpiry } from 'src/modules/keys/key-expiry.service';
import { NotificationMessagesRepository } from 'src/modules/notifications/notification-messages.repository';
import { expectAccessMatrix, roleMembers, RouteCase } from 'test/support/access-matrix';
import { bearer, Operator, SERVICE_SECRET, startTestApp, TestApp } from 'test/support/app';
import { eventually } from 'test/support/eventually';
import {
  deleteEndpoint,
  endpointFailingSince,
  expireApproval,
  forgetNotification,
  reopenApproval,
  seedPendingDelivery,
  setApprovalExpiry,
} from 'test/support/factories';
import { Receiver } from 'test/support/receiver';
import { signServiceToken } from 'src/platform/auth/service-token';

const headersOf = (r: { headers: Record<string, unknown> }) => ({
  'webhook-id': String(r.headers['webhook-id']),
  'webhook-timestamp': String(r.headers['webhook-timestamp']),
  'webhook-signature': String(r.headers['webhook-signature']),
});

describe('operator notifications: endpoints, signed delivery, retries, the outbox', () => {
  let t: TestApp;
  let owner: Operator;
  const receivers: Receiver[] = [];
  const receiver = async (behaviour?: ConstructorParameters<typeof Object>[0]) => {
    const r = await Receiver.start(behaviour as never);
    receivers.push(r);
    return r;
  };
  const base = (op: Operator = owner) => `/api/v1/workspaces/${op.workspaceId}`;
  const create = async (body: Record<string, unknown>, op: Operator = owner, status = 201) => {
    const res = await t.http().post(`${base(op)}/notification-endpoints`).set(bearer(op)).send(body);
    expect([res.status, res.body]).toEqual([status, expect.anything()]);
    return res.body;
  };
  const messages = async (op: Operator = owner, query = '') => (await t.http().get(`${base(op)}/notification-messages${query}`).set(bearer(op)).expect(200)).body.messages;
  const attempts = async (endpointId: string, op: Operator = owner, query = '') =>
    (await t.http().get(`${base(op)}/notification-endpoints/${endpointId}/attempts${query}`).set(bearer(op)).expect(200)).body;

  beforeAll(async () => {
    t = await startTestApp(
      { NOTIFY_ALLOW_HTTP: '1', NOTIFY_ALLOW_PRIVATE_TARGETS: '1', NOTIFY_RETRY_SCHEDULE_S: '1,1', NOTIFY_TIMEOUT_MS: '1500', NOTIFY_DISABLE_AFTER_S: '3600' },
      { jobs: true },
    );
    owner = await t.signIn();
  });
  afterAll(async () => {
    for (const r of receivers) await r.stop();
    await t.close();
  });

  describe('endpoints', () => {
    it('creates an endpoint, shows the whsec_ secret once, never again, and audits the act without it', async () => {
      const op = await t.signIn();
      const r = await receiver();
      const created = await create({ url: r.url, event_types: ['approval.*'], description: 'pager' }, op);
      expect(created).toEqual({
        endpoint_id: expect.stringMatching(/^nep_/),
        workspace_id: op.workspaceId,
        url: r.url,
        event_types: ['approval.*'],
        format: 'standard',
        description: 'pager',
        enabled: true,
        disabled_reason: null,
        revision: 1,
        secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{32}$/),
        secret_last4: created.secret.slice(-4),
        secret_rotated_at: null,
        created_at: expect.any(String),
        updated_at: expect.any(String),
      });
      expect(Buffer.from(created.secret.slice(6), 'base64')).toHaveLength(24);
      const { secret, ...document } = created;
      const got = await t.http().get(`${base(op)}/notification-endpoints/${created.endpoint_id}`).set(bearer(op)).expect(200);
      expect(got.body).toEqual(document);
      const list = await t.http().get(`${base(op)}/notification-endpoints`).set(bearer(op)).expect(200);
      expect(list.body).toEqual({ endpoints: [document] });
      const audit = await t.db.query(`SELECT action, target, detail FROM audit_events WHERE workspace_id = $1 AND action LIKE 'notification_endpoint.%'`, [op.workspaceId]);
      expect(audit).toEqual([{ action: 'notification_endpoint.create', target: created.endpoint_id, detail: { status: 'enabled' } }]);
      const everything = JSON.stringify(await t.db.query(`SELECT * FROM audit_events WHERE workspace_id = $1`, [op.workspaceId]));
      expect(everything).not.toContain(secret.slice(6));
    });

    it('refuses bad bodies naming the field, and writes nothing', async () => {
      const op = await t.signIn();
      const refuse = async (body: Record<string, unknown>, loc: (string | number)[], msg?: string) => {
        const res = await t.http().post(`${base(op)}/notification-endpoints`).set(bearer(op)).send(body).expect(422);
        expect(res.body.detail[0].loc).toEqual(loc);
        if (msg) expect(res.body.detail[0].msg).toBe(msg);
      };
      await refuse({ event_types: ['*'] }, ['body', 'url']);
      await refuse({ url: 'ftp://example.com/x', event_types: ['*'] }, ['body', 'url'], 'url must use https or http');
      await refuse({ url: 'not a url', event_types: ['*'] }, ['body', 'url'], 'url must be an absolute URL');
      await refuse({ url: `https://example.com/${'a'.repeat(2048)}`, event_types: ['*'] }, ['body', 'url']);
      await refuse({ url: 'https://example.com/', event_types: [] }, ['body', 'event_types']);
      await refuse({ url: 'https://example.com/', event_types: ['key.revoked', 'nope.*'] }, ['body', 'event_types', 1], 'must be an event type, a prefix.* pattern or *');
      await refuse({ url: 'https://example.com/', event_types: ['approval.requested.extra'] }, ['body', 'event_types', 0]);
      await refuse({ url: 'https://example.com/', event_types: Array(65).fill('*') }, ['body', 'event_types']);
      await refuse({ url: 'https://example.com/', event_types: ['*'], format: 'teams' }, ['body', 'format']);
      await refuse({ url: 'https://example.com/', event_types: ['*'], description: 'x'.repeat(513) }, ['body', 'description']);
      await refuse({ url: 'https://example.com/', event_types: ['*'], enabled: null }, ['body', 'enabled']);
      await refuse({ url: 'https://example.com/', event_types: ['*'], secret: 'whsec_mine' }, ['body', 'secret']);
      const rows = await t.db.query(`SELECT 1 FROM notification_endpoints WHERE workspace_id = $1`, [op.workspaceId]);
      expect(rows).toEqual([]);
    });

    it('answers 409 for the 21st endpoint of a workspace', async () => {
      const op = await t.signIn();
      for (let i = 0; i < 20; i++) await create({ url: `https://example.com/${i}`, event_types: ['*'] }, op);
      const res = await t.http().post(`${base(op)}/notification-endpoints`).set(bearer(op)).send({ url: 'https://example.com/21', event_types: ['*'] });
      expect([res.status, res.body]).toEqual([409, { detail: 'notification endpoint limit reached' }]);
    });

    it('patches with expected_revision (409 when stale), reads disabled_reason operator, deletes (204, then 404)', async () => {
      const op = await t.signIn();
      const e = await create({ url: 'https://example.com/a', event_types: ['*'] }, op);
      const path = `${base(op)}/notification-endpoints/${e.endpoint_id}`;
      const off = await t.http().patch(path).set(bearer(op)).send({ enabled: false, expected_revision: 1 }).expect(200);
      expect(off.body).toMatchObject({ enabled: false, disabled_reason: 'operator', revision: 2 });
      const stale = await t.http().patch(path).set(bearer(op)).send({ enabled: true, expected_revision: 1 });
      expect([stale.status, stale.body]).toEqual([409, { detail: 'notification endpoint revision changed' }]);
      const on = await t.http().patch(path).set(bearer(op)).send({ enabled: true, description: 'x', event_types: ['key.*'], expected_revision: 2 }).expect(200);
      expect(on.body).toMatchObject({ enabled: true, disabled_reason: null, revision: 3, description: 'x', event_types: ['key.*'] });
      const missing = await t.http().patch(path).set(bearer(op)).send({ enabled: true });
      expect(missing.status).toBe(422);
      expect(missing.body.detail[0].loc).toEqual(['body', 'expected_revision']);
      await t.http().delete(path).set(bearer(op)).expect(204);
      for (const res of [await t.http().get(path).set(bearer(op)), await t.http().delete(path).set(bearer(op)), await t.http().post(`${path}/test`).set(bearer(op))]) {
        expect([res.status, res.body]).toEqual([404, { detail: 'notification endpoint not found' }]);
      }
      const actions = await t.db.query(`SELECT action FROM audit_events WHERE workspace_id = $1 AND action LIKE 'notification_endpoint.%' ORDER BY seq`, [op.workspaceId]);
      expect(actions.map((a: { action: string }) => a.action)).toEqual(['notification_endpoint.create', 'notification_endpoint.update', 'notification_endpoint.update', 'notification_endpoint.delete']);
    });
  });

  describe('delivery', () => {
    it('POSTs the test ping to its endpoint only, signed so that standardwebhooks verifies it, and logs the attempt', async () => {
      const op = await t.signIn();
      const r = await receiver();
      const other = await receiver();
      const e = await create({ url: r.url, event_types: ['key.revoked'] }, op);
      await create({ url: other.url, event_types: ['*'] }, op);
      const res = await t.http().post(`${base(op)}/notification-endpoints/${e.endpoint_id}/test`).set(bearer(op)).expect(202);
      expect(res.body).toEqual({ message_id: expect.stringMatching(/^msg_/) });
      await eventually(async () => expect(r.received).toHaveLength(1));
      const [got] = r.received;
      expect(got.headers['content-type']).toBe('application/json');
      expect(got.headers['webhook-id']).toBe(res.body.message_id);
      const payload = new Webhook(e.secret).verify(got.body, headersOf(got));
      expect(payload).toEqual({ type: 'notification.test', timestamp: expect.stringMatching(/Z$/), data: { endpoint_id: e.endpoint_id, workspace_id: op.workspaceId } });
      expect(Object.keys(JSON.parse(got.body))).toEqual(['type', 'timestamp', 'data']);
      // By hand: HMAC-SHA256 over id.timestamp.body with the base64-decoded secret.
      const expected = createHmac('sha256', Buffer.from(e.secret.slice(6), 'base64')).update(`${got.headers['webhook-id']}.${got.headers['webhook-timestamp']}.${got.body}`).digest('base64');
      expect(got.headers['webhook-signature']).toBe(`v1,${expected}`);
      // A forged body or another secret does not verify.
      expect(() => new Webhook(e.secret).verify(got.body.replace('notification.test', 'key.revoked'), headersOf(got))).toThrow();
      expect(() => new Webhook('whsec_' + Buffer.alloc(24, 1).toString('base64')).verify(got.body, headersOf(got))).toThrow();
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(other.received).toHaveLength(0);
      const log = await eventually(async () => {
        const body = await attempts(e.endpoint_id, op);
        expect(body.attempts).toHaveLength(1);
        return body;
      });
      expect(log).toEqual({
        attempts: [
          {
            attempt_id: expect.stringMatching(/^nat_/),
            message_id: res.body.message_id,
            type: 'notification.test',
            attempt: 1,
            status: 'succeeded',
            response_status: 200,
            error: null,
            duration_ms: expect.any(Number),
            response_excerpt: 'ok',
            attempted_at: expect.any(String),
          },
        ],
        next_cursor: null,
      });
      const [message] = await messages(op);
      expect(message).toEqual({
        message_id: res.body.message_id,
        type: 'notification.test',
        timestamp: expect.any(String),
        data: { endpoint_id: e.endpoint_id, workspace_id: op.workspaceId },
        deliveries: [{ endpoint_id: e.endpoint_id, state: 'delivered', attempts: 1, last_attempt_at: expect.any(String), next_attempt_at: null }],
      });
    });

    it('signs with both secrets during a rotation grace, and with the new one alone after grace 0', async () => {
      const op = await t.signIn();
      const r = await receiver();
      const e = await create({ url: r.url, event_types: ['*'] }, op);
      const path = `${base(op)}/notification-endpoints/${e.endpoint_id}`;
      const rotated = (await t.http().post(`${path}/rotate-secret`).set(bearer(op)).send({}).expect(200)).body;
      expect(rotated.secret).not.toBe(e.secret);
      expect(rotated).toMatchObject({ secret_last4: rotated.secret.slice(-4), secret_rotated_at: expect.any(String) });
      await t.http().post(`${path}/test`).set(bearer(op)).expect(202);
      await eventually(async () => expect(r.received).toHaveLength(1));
      expect(String(r.received[0].headers['webhook-signature']).split(' ')).toHaveLength(2);
      for (const secret of [e.secret, rotated.secret]) expect(() => new Webhook(secret).verify(r.received[0].body, headersOf(r.received[0]))).not.toThrow();

      const again = (await t.http().post(`${path}/rotate-secret`).set(bearer(op)).send({ grace_seconds: 0 }).expect(200)).body;
      await t.http().post(`${path}/test`).set(bearer(op)).expect(202);
      await eventually(async () => expect(r.received).toHaveLength(2));
      expect(String(r.received[1].headers['webhook-signature']).split(' ')).toHaveLength(1);
      expect(() => new Webhook(again.secret).verify(r.received[1].body, headersOf(r.received[1]))).not.toThrow();
      expect(() => new Webhook(rotated.secret).verify(r.received[1].body, headersOf(r.received[1]))).toThrow();
      const bad = await t.http().post(`${path}/rotate-secret`).set(bearer(op)).send({ grace_seconds: 604801 });
      expect([bad.status, bad.body.detail?.[0]?.loc]).toEqual([422, ['body', 'grace_seconds']]);
    });

    it('retries a receiver that fails twice, with the same webhook-id, until it succeeds', async () => {
      const op = await t.signIn();
      const r = await receiver((n: number) => (n < 2 ? { status: 500, body: 'down' } : { status: 204 }));
      const e = await create({ url: r.url, event_types: ['*'] }, op);
      const { message_id } = (await t.http().post(`${base(op)}/notification-endpoints/${e.endpoint_id}/test`).set(bearer(op)).expect(202)).body;
      await eventually(async () => expect(r.received).toHaveLength(3), 100, 100);
      expect(new Set(r.received.map((x) => x.headers['webhook-id']))).toEqual(new Set([message_id]));
      expect(r.received[1].at - r.received[0].at).toBeGreaterThanOrEqual(900);
      const log = await eventually(async () => {
        const body = await attempts(e.endpoint_id, op);
        expect(body.attempts).toHaveLength(3);
        return body.attempts;
      });
      expect(log.map((a: { attempt: number; status: string; error: string | null; response_status: number }) => [a.attempt, a.status, a.error, a.response_status])).toEqual([
        [3, 'succeeded', null, 204],
        [2, 'failed', 'http_status', 500],
        [1, 'failed', 'http_status', 500],
      ]);
      expect(log[1].response_excerpt).toBe('down');
      const failedOnly = await attempts(e.endpoint_id, op, '?status=failed&limit=1');
      expect(failedOnly.attempts).toHaveLength(1);
      const next = await attempts(e.endpoint_id, op, `?status=failed&limit=1&cursor=${failedOnly.next_cursor}`);
      expect(next.attempts.map((a: { attempt: number }) => a.attempt)).toEqual([1]);
    });

    it('marks a delivery failed after the last scheduled attempt; recover and resend deliver it again with the same webhook-id', async () => {
      const op = await t.signIn();
      let up = false;
      const r = await receiver(() => (up ? { status: 200 } : { status: 503 }));
      const e = await create({ url: r.url, event_types: ['*'] }, op);
      const { message_id } = (await t.http().post(`${base(op)}/notification-endpoints/${e.endpoint_id}/test`).set(bearer(op)).expect(202)).body;
      await eventually(async () => {
        const [m] = await messages(op, '?type=notification.test');
        expect(m.deliveries[0]).toMatchObject({ state: 'failed', attempts: 3 });
      });
      up = true;
      const since = new Date(Date.now() - 60_000).toISOString();
      const recovered = await t.http().post(`${base(op)}/notification-endpoints/${e.endpoint_id}/recover`).set(bearer(op)).send({ since }).expect(202);
      expect(recovered.body).toEqual({ requeued: 1 });
      await eventually(async () => expect(r.received).toHaveLength(4));
      expect(r.received[3].headers['webhook-id']).toBe(message_id);
      const resent = await t.http().post(`${base(op)}/notification-messages/${message_id}/resend`).set(bearer(op)).send({}).expect(202);
      expect(resent.body).toEqual({ requeued: 1 });
      await eventually(async () => expect(r.received).toHaveLength(5));
      expect(r.received[4].headers['webhook-id']).toBe(message_id);
      const tooOld = await t.http().post(`${base(op)}/notification-endpoints/${e.endpoint_id}/recover`).set(bearer(op)).send({ since: '2020-01-01T00:00:00Z' });
      expect([tooOld.status, tooOld.body.detail[0].loc, tooOld.body.detail[0].msg]).toEqual([422, ['body', 'since'], 'since must be within 30 days']);
      const unknown = await t.http().post(`${base(op)}/notification-messages/msg_000000000000000000000000/resend`).set(bearer(op)).send({});
      expect([unknown.status, unknown.body]).toEqual([404, { detail: 'notification message not found' }]);
      const noEndpoint = await t.http().post(`${base(op)}/notification-messages/${message_id}/resend`).set(bearer(op)).send({ endpoint_id: 'nep_000000000000000000000000' });
      expect([noEndpoint.status, noEndpoint.body]).toEqual([404, { detail: 'notification endpoint not found' }]);
    });

    it('disables an endpoint that answers 410 at once (gone), with an audit row and a notification_endpoint.disabled message', async () => {
      const op = await t.signIn();
      const gone = await receiver(() => ({ status: 410 }));
      const watcher = await receiver();
      const e = await create({ url: gone.url, event_types: ['*'] }, op);
      await create({ url: watcher.url, event_types: ['notification_endpoint.disabled'] }, op);
      await t.http().post(`${base(op)}/notification-endpoints/${e.endpoint_id}/test`).set(bearer(op)).expect(202);
      await eventually(async () => expect(watcher.received).toHaveLength(1));
      expect(JSON.parse(watcher.received[0].body)).toMatchObject({ type: 'notification_endpoint.disabled', data: { endpoint_id: e.endpoint_id, reason: 'gone', workspace_id: op.workspaceId } });
      const got = await t.http().get(`${base(op)}/notification-endpoints/${e.endpoint_id}`).set(bearer(op)).expect(200);
      expect(got.body).toMatchObject({ enabled: false, disabled_reason: 'gone', revision: 2 });
      const audit = await t.db.query(`SELECT actor_user_id, detail FROM audit_events WHERE workspace_id = $1 AND action = 'notification_endpoint.disable'`, [op.workspaceId]);
      expect(audit).toEqual([{ actor_user_id: null, detail: { reason: 'gone' } }]);
      expect(gone.received).toHaveLength(1);
    });

    it('disables an endpoint failing without a success for NOTIFY_DISABLE_AFTER_S (failing)', async () => {
      const op = await t.signIn();
      const r = await receiver(() => ({ status: 500 }));
      const e = await create({ url: r.url, event_types: ['*'] }, op);
      await endpointFailingSince(t, op.workspaceId, e.endpoint_id, 2);
      await t.http().post(`${base(op)}/notification-endpoints/${e.endpoint_id}/test`).set(bearer(op)).expect(202);
      await eventually(async () => {
        const got = await t.http().get(`${base(op)}/notification-endpoints/${e.endpoint_id}`).set(bearer(op)).expect(200);
        expect(got.body).toMatchObject({ enabled: false, disabled_reason: 'failing' });
      });
    });

    it('settles attempts that finish together in one statement: each logged, each delivery moved, the failing streak kept in attempt order', async () => {
      const op = await t.signIn();
      // Disabled: the delivery job leaves its rows alone; the batches below are what it would write.
      const e = await create({ url: 'http://127.0.0.1:9/hook', event_types: ['*'], enabled: false }, op);
      const ids = ['a', 'b', 'c', 'd', 'e', 'f'].map((x) => `msg_settle${x}${op.workspaceId.slice(-8)}`);
      for (const id of ids) {
        await seedPendingDelivery(t, op.workspaceId, e.endpoint_id, id);
      }
      const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
      const item = (i: number, ok: boolean, s: number) => ({
        attempt: { workspaceId: op.workspaceId, endpointId: e.endpoint_id, messageId: ids[i], type: 'notification.test', attempt: 1, status: ok ? ('succeeded' as const) : ('failed' as const), responseStatus: ok ? 204 : 500, error: ok ? null : ('http_status' as const), durationMs: 3, responseExcerpt: '', attemptedAt: at(s) },
        next: ok ? { state: 'delivered' as const, nextAttemptAt: null } : { state: 'pending' as const, nextAttemptAt: at(100) },
      });
      const repo = t.app.get(NotificationMessagesRepository);
      const failingSince = async () => (await t.db.query(`SELECT failing_since FROM notification_endpoints WHERE id = $1`, [e.endpoint_id]))[0].failing_since;
      // Out of order within the batch: a success at 1 s, failures at 3 s and 2 s: failing since 2 s.
      expect(await repo.settle([item(2, false, 3), item(0, true, 1), item(1, false, 2)])).toEqual(new Map([[e.endpoint_id, at(2)]]));
      expect(await failingSince()).toEqual(at(2));
      // Failing already: a later failure keeps the start of the streak.
      await repo.settle([item(3, false, 4)]);
      expect(await failingSince()).toEqual(at(2));
      // The batch's latest attempt succeeded: the streak ends, whatever failed before it.
      expect(await repo.settle([item(5, true, 6), item(4, false, 5)])).toEqual(new Map());
      expect(await failingSince()).toBeNull();
      const deliveries = await t.db.query(`SELECT message_id, state, attempts FROM notification_deliveries WHERE endpoint_id = $1 ORDER BY message_id`, [e.endpoint_id]);
      expect(deliveries.map((d: { state: string }) => d.state)).toEqual(['delivered', 'pending', 'pending', 'pending', 'pending', 'delivered']);
      const logged = await t.db.query(`SELECT message_id, status, attempted_at FROM notification_attempts WHERE endpoint_id = $1 ORDER BY attempted_at`, [e.endpoint_id]);
      expect(logged.map((a: { message_id: string; status: string }) => [a.message_id, a.status])).toEqual([
        [ids[0], 'succeeded'], [ids[1], 'failed'], [ids[2], 'failed'], [ids[3], 'failed'], [ids[4], 'failed'], [ids[5], 'succeeded'],
      ]);
      // An endpoint deleted meanwhile: nothing is written for it.
      await deleteEndpoint(t, op.workspaceId, e.endpoint_id);
      expect(await repo.settle([item(1, true, 7)])).toEqual(new Map());
      expect(await t.db.query(`SELECT 1 FROM notification_attempts WHERE endpoint_id = $1`, [e.endpoint_id])).toEqual([]);
    });

    it('keeps a receiver that hangs on every call from slowing another endpoint (timeout attempts logged)', async () => {
      const op = await t.signIn();
      const hang = await receiver(() => 'hang');
      const fast = await receiver();
      const slow = await create({ url: hang.url, event_types: ['*'] }, op);
      const quick = await create({ url: fast.url, event_types: ['*'] }, op);
      for (let i = 0; i < 40; i++) await t.http().post(`${base(op)}/notification-endpoints/${slow.endpoint_id}/test`).set(bearer(op)).expect(202);
      await eventually(async () => expect(hang.received.length).toBeGreaterThan(0));
      const started = Date.now();
      await t.http().post(`${base(op)}/notification-endpoints/${quick.endpoint_id}/test`).set(bearer(op)).expect(202);
      await eventually(async () => expect(fast.received).toHaveLength(1), 200, 10);
      expect(Date.now() - started).toBeLessThan(1000);
      const log = await eventually(async () => {
        const body = await attempts(slow.endpoint_id, op, '?limit=1');
        expect(body.attempts).toHaveLength(1);
        return body.attempts[0];
      });
      expect(log).toMatchObject({ status: 'failed', error: 'timeout', response_status: null });
      expect(log.duration_ms).toBeGreaterThanOrEqual(1400);
    });

    it('answers Slack-format endpoints {text, blocks} with the same headers', async () => {
      const op = await t.signIn();
      const r = await receiver();
      const e = await create({ url: r.url, event_types: ['*'], format: 'slack' }, op);
      await t.http().post(`${base(op)}/notification-endpoints/${e.endpoint_id}/test`).set(bearer(op)).expect(202);
      await eventually(async () => expect(r.received).toHaveLength(1));
      const body = JSON.parse(r.received[0].body);
      expect(Object.keys(body)).toEqual(['text', 'blocks']);
      expect(body.text).toContain(`Test notification for endpoint ${e.endpoint_id}`);
      expect(body.text).toContain(`/workspaces/${op.workspaceId}`);
      expect(() => new Webhook(e.secret).verify(r.received[0].body, headersOf(r.received[0]))).not.toThrow();
    });
  });

  describe('the outbox', () => {
    const serviceAuth = async () => ({ Authorization: `Bearer ${await signServiceToken(SERVICE_SECRET, 'gateway', 'control')}` });

    it('writes key.revoked and key.rotated with the act, audit.event only to endpoints naming it, and nothing for a refused act', async () => {
      const op = await t.signIn();
      const all = await receiver();
      const audits = await receiver();
      await create({ url: all.url, event_types: ['*'] }, op);
      await create({ url: audits.url, event_types: ['audit.event'] }, op);
      const key = (await t.http().post(`${base(op)}/keys`).set(bearer(op)).send({ agent_id: 'agent-1' }).expect(201)).body;
      await t.http().post(`${base(op)}/keys/${key.key_id}/rotate`).set(bearer(op)).send({}).expect(200);
      await t.http().post(`${base(op)}/keys/${key.key_id}/revoke`).set(bearer(op)).send({}).expect(200);
      // Refused: rotating a revoked key (409) writes no event.
      await t.http().post(`${base(op)}/keys/${key.key_id}/rotate`).set(bearer(op)).send({}).expect(409);
      await eventually(async () => expect(all.received).toHaveLength(2));
      expect(all.received.map((x) => JSON.parse(x.body))).toEqual([
        { type: 'key.rotated', timestamp: expect.any(String), data: { key_id: key.key_id, agent_id: 'agent-1', workspace_id: op.workspaceId } },
        { type: 'key.revoked', timestamp: expect.any(String), data: { key_id: key.key_id, agent_id: 'agent-1', workspace_id: op.workspaceId } },
      ]);
      await eventually(async () => expect(audits.received).toHaveLength(4));
      const listed = (await t.http().get(`${base(op)}/audit?from=2020-01-01T00:00:00Z&to=2100-01-01T00:00:00Z&limit=200`).set(bearer(op)).expect(200)).body.events;
      const delivered = audits.received.map((x) => JSON.parse(x.body)).filter((m) => m.type === 'audit.event').map((m) => m.data);
      for (const event of delivered) expect(listed).toContainEqual(event);
      expect(delivered.map((d) => d.action).sort()).toEqual(['key.mint', 'key.revoke', 'key.rotate', 'notification_endpoint.create']);
      expect(delivered).toHaveLength(4);
      const types = (await messages(op, '?limit=200')).map((m: { type: string }) => m.type);
      expect(types.filter((x: string) => x === 'key.rotated')).toHaveLength(1);
    });

    it('writes audit.event in the statement that appends the audit row: its occurred_at, the act\'s text whole, nothing for a rolled-back act', async () => {
      const op = await t.signIn();
      const ws = op.workspaceId;
      const audit = t.app.get(AuditService);
      const transactions = t.app.get(Transactions);
      // Text shaped like the body's cut marker, with JSON's special characters: none of it may be taken for the hole.
      const target = `"hole_${'0'.repeat(32)}" hole_ \\" \\\\ </script> \u2028 \u0001 ü 😀`;
      const rolledBack = transactions.run(async (tx) => {
        await audit.record(tx, { workspaceId: ws, actor: null, action: 'key.mint', target: 'rolled-back', detail: {} });
        throw new Error('rolled back');
      });
      await expect(rolledBack).rejects.toThrow('rolled back');
      await transactions.run((tx) => audit.record(tx, { workspaceId: ws, actor: null, action: 'key.mint', target, detail: { prefix: target.slice(0, 20) } }));
      const listed = (await t.http().get(`${base(op)}/audit?from=2020-01-01T00:00:00Z&to=2100-01-01T00:00:00Z&limit=200`).set(bearer(op)).expect(200)).body.events;
      const rows: { body: string; created_at: Date }[] = await t.db.query(`SELECT body, created_at FROM notification_messages WHERE workspace_id = $1 AND type = 'audit.event'`, [ws]);
      const bodies = rows.map((r) => JSON.parse(r.body));
      // One message per audit row, each carrying the row exactly as the trail lists it (occurred_at included).
      expect(bodies.map((b) => b.data)).toEqual(expect.arrayContaining(listed));
      expect(bodies).toHaveLength(listed.length);
      const written = bodies.filter((b) => b.data.target === target);
      expect(written).toEqual([{ type: 'audit.event', timestamp: expect.any(String), data: listed.find((e: { target: string }) => e.target === target) }]);
      expect(written[0].data.occurred_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      expect(listed.some((e: { target: string }) => e.target === 'rolled-back')).toBe(false);
      expect(bodies.some((b) => b.data.target === 'rolled-back')).toBe(false);
    });

    it('holds a call once under concurrent retries of the same request: one approval, one approval.requested; an unknown key announces a null agent', async () => {
      const op = await t.signIn();
      const ws = op.workspaceId;
      await t.http().post(`${base(op)}/approval-policies`).set(bearer(op)).send({
        name: 'refunds',
        rules: [{ rule_id: 'r1', effect: 'allow', actions: ['tool.call'], tools: ['refund'], environments: ['dev', 'stage', 'prod'], approver_roles: ['owner'], approver_user_ids: [], quorum: 1 }],
      }).expect(200);
      const key = (await t.http().post(`${base(op)}/keys`).set(bearer(op)).send({ agent_id: 'agent-c' }).expect(201)).body;
      const hold = async (requestId: string, keyId: string) =>
        t.http().post(`/internal/v1/workspaces/${ws}/approvals`).set(await serviceAuth()).send({
          request_id: requestId, key_id: keyId, tool: 'refund', invocation_tool: 'refund', connection_id: 'conn_0123456789abcdef01234567', env: 'dev', safe_summary: {}, reason: 'r',
        });
      const answers = await Promise.all(Array.from({ length: 6 }, () => hold('req_0123456789abcdef0123456c', key.key_id)));
      expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 200, 200, 200, 201]);
      expect(new Set(answers.map((a) => a.body.approval_id)).size).toBe(1);
      const unknown = await hold('req_0123456789abcdef0123456d', 'key_0123456789abcdef01234567');
      expect(unknown.status).toBe(201);
      const requested = (await messages(op, '?type=approval.requested')).map((m: { data: { approval_id: string; agent_id: string | null } }) => [m.data.approval_id, m.data.agent_id]);
      expect(requested.sort()).toEqual([[answers[0].body.approval_id, 'agent-c'], [unknown.body.approval_id, null]].sort());
    });

    it('emits approval.requested on a hold, approval.vote_cast and approval.resolved on the deciding vote, nothing for a refused vote', async () => {
      const op = await t.signIn();
      const ws = op.workspaceId;
      const key = (await t.http().post(`${base(op)}/keys`).set(bearer(op)).send({ agent_id: 'agent-7' }).expect(201)).body;
      await t.http().post(`${base(op)}/approval-policies`).set(bearer(op)).send({
        name: 'refunds',
        rules: [{ rule_id: 'r1', effect: 'allow', actions: ['tool.call'], tools: ['refund'], environments: ['dev', 'stage', 'prod'], approver_roles: ['owner'], approver_user_ids: [], quorum: 1 }],
      }).expect(200);
      const held = await t.http().post(`/internal/v1/workspaces/${ws}/approvals`).set(await serviceAuth()).send({
        request_id: 'req_0123456789abcdef01234567', key_id: key.key_id, tool: 'refund', invocation_tool: 'refund', connection_id: 'conn_0123456789abcdef01234567', env: 'dev', safe_summary: {}, reason: 'large refund',
      });
      expect(held.status).toBe(201);
      const approvalId = held.body.approval_id;
      const stale = await t.http().post(`${base(op)}/approvals/${approvalId}/votes`).set(bearer(op)).send({ decision: 'approve', expected_revision: 99, reason: 'ok' });
      expect(stale.status).toBe(409);
      await t.http().post(`${base(op)}/approvals/${approvalId}/votes`).set(bearer(op)).send({ decision: 'approve', expected_revision: held.body.revision, reason: 'ok' }).expect(200);
      const list = (await messages(op, '?limit=200')).filter((m: { type: string }) => m.type.startsWith('approval.')).reverse();
      expect(list.map((m: { type: string; data: unknown }) => [m.type, m.data])).toEqual([
        [
          'approval.requested',
          {
            approval_id: approvalId, tool: 'refund', agent_id: 'agent-7', key_id: key.key_id, environment: 'dev', expires_at: held.body.expires_at, quorum: 1,
            approver_roles: ['owner'], approver_user_ids: [], url: `${t.config.webUrl}/workspaces/${ws}/approvals/${approvalId}`, workspace_id: ws,
          },
        ],
        ['approval.vote_cast', { approval_id: approvalId, user_id: op.userId, vote: 'approve', approvals: 1, quorum: 1, workspace_id: ws }],
        ['approval.resolved', { approval_id: approvalId, decision_status: 'approved', resolved_at: expect.any(String), workspace_id: ws }],
      ]);
      // From time: exactly once however many passes (replicas) run at once.
      await reopenApproval(t, approvalId);
      await setApprovalExpiry(t, approvalId, 60);
      await forgetNotification(t, ws, `approval.resolved:${approvalId}`);
      const approvals = t.app.get(ApprovalEvents);
      await Promise.all([approvals.notifyTimeouts(), approvals.notifyTimeouts(), approvals.notifyTimeouts()]);
      await expireApproval(t, approvalId);
      await Promise.all([approvals.notifyTimeouts(), approvals.notifyTimeouts(), approvals.notifyTimeouts()]);
      const timed = await t.db.query(`SELECT type, count(*)::int AS n FROM notification_messages WHERE workspace_id = $1 AND type IN ('approval.expiring', 'approval.resolved') GROUP BY type ORDER BY type`, [ws]);
      expect(timed).toEqual([{ type: 'approval.expiring', n: 1 }, { type: 'approval.resolved', n: 1 }]);
      const [expired] = (await messages(op, '?type=approval.resolved')).map((m: { data: unknown }) => m.data);
      expect(expired).toMatchObject({ decision_status: 'expired' });
    });

    it('emits policy.published with the revision and the publisher when a publish commits, nothing for a refused publish', async () => {
      const op = await t.signIn();
      const draft = (await t.http().get(`${base(op)}/policy`).set(bearer(op)).expect(200)).body;
      // Refused (stale draft hash): no revision, no message.
      await t.http().post(`${base(op)}/policy/publish`).set(bearer(op)).send({ expected_draft_hash: `sha256:${'0'.repeat(64)}` }).expect(409);
      expect(await messages(op, '?type=policy.published')).toEqual([]);
      const published = (await t.http().post(`${base(op)}/policy/publish`).set(bearer(op)).send({ expected_draft_hash: draft.draft_hash }).expect(200)).body;
      // Refused (the revision moved since): nothing more.
      await t.http().post(`${base(op)}/policy/publish`).set(bearer(op)).send({ expected_draft_hash: draft.draft_hash }).expect(409);
      const list = await messages(op, '?type=policy.published');
      expect(list.map((m: { data: unknown }) => m.data)).toEqual([{ revision_id: published.revision_id, user_id: op.userId, workspace_id: op.workspaceId }]);
    });

    it('emits approval.resolved (invalidated) for pending approvals when an approval-policy change invalidates them, nothing for a refused change', async () => {
      const op = await t.signIn();
      const ws = op.workspaceId;
      const key = (await t.http().post(`${base(op)}/keys`).set(bearer(op)).send({ agent_id: 'agent-9' }).expect(201)).body;
      const rule = { rule_id: 'r1', effect: 'allow', actions: ['tool.call'], tools: ['refund'], environments: ['dev', 'stage', 'prod'], approver_roles: ['owner'], approver_user_ids: [], quorum: 1 };
      const policy = (await t.http().post(`${base(op)}/approval-policies`).set(bearer(op)).send({ name: 'refunds', rules: [rule] }).expect(200)).body;
      const hold = async (requestId: string) =>
        (
          await t.http().post(`/internal/v1/workspaces/${ws}/approvals`).set(await serviceAuth()).send({
            request_id: requestId, key_id: key.key_id, tool: 'refund', invocation_tool: 'refund', connection_id: 'conn_0123456789abcdef01234567', env: 'dev', safe_summary: {}, reason: 'r',
          }).expect(201)
        ).body;
      const pending = await hold('req_0123456789abcdef0123456a');
      const approved = await hold('req_0123456789abcdef0123456b');
      await t.http().post(`${base(op)}/approvals/${approved.approval_id}/votes`).set(bearer(op)).send({ decision: 'approve', expected_revision: approved.revision, reason: 'ok' }).expect(200);
      const resolved = async () => (await messages(op, '?type=approval.resolved')).map((m: { data: { approval_id: string; decision_status: string } }) => [m.data.approval_id, m.data.decision_status]);
      expect(await resolved()).toEqual([[approved.approval_id, 'approved']]);
      // Refused (stale expected_revision): the rule set is unchanged and nothing is emitted.
      await t.http().put(`${base(op)}/approval-policies/${policy.policy_id}`).set(bearer(op)).send({ name: 'refunds', rules: [{ ...rule, quorum: 2 }], expected_revision: 99 }).expect(409);
      expect(await resolved()).toEqual([[approved.approval_id, 'approved']]);
      await t.http().put(`${base(op)}/approval-policies/${policy.policy_id}`).set(bearer(op)).send({ name: 'refunds', rules: [{ ...rule, quorum: 2 }], expected_revision: policy.revision }).expect(200);
      const listed = (await t.http().get(`${base(op)}/approvals/${pending.approval_id}`).set(bearer(op)).expect(200)).body;
      expect(listed.decision_status).toBe('invalidated');
      // The pending one is resolved (invalidated) once; the approved one already left pending.
      const list = await messages(op, '?type=approval.resolved');
      expect(list.map((m: { data: unknown }) => m.data)).toEqual([
        { approval_id: pending.approval_id, decision_status: 'invalidated', resolved_at: expect.any(String), workspace_id: ws },
        { approval_id: approved.approval_id, decision_status: 'approved', resolved_at: expect.any(String), workspace_id: ws },
      ]);
      // A later change (disable) finds it already resolved: still once.
      await t.http().post(`${base(op)}/approval-policies/${policy.policy_id}/disable`).set(bearer(op)).send({ expected_revision: policy.revision + 1 }).expect(200);
      expect((await resolved()).filter(([id]: string[]) => id === pending.approval_id)).toHaveLength(1);
    });

    it('emits key.expiring once per key, whatever the concurrent passes', async () => {
      const op = await t.signIn();
      const soon = new Date(Date.now() + 3 * 86_400_000).toISOString();
      const key = (await t.http().post(`${base(op)}/keys`).set(bearer(op)).send({ agent_id: 'agent-x', expires_at: soon }).expect(201)).body;
      await t.http().post(`${base(op)}/keys`).set(bearer(op)).send({ agent_id: 'agent-later', expires_at: new Date(Date.now() + 30 * 86_400_000).toISOString() }).expect(201);
      const expiry = t.app.get(KeyExpiry);
      await Promise.all([expiry.notifyExpiring(), expiry.notifyExpiring(), expiry.notifyExpiring(), expiry.notifyExpiring()]);
      await expiry.notifyExpiring();
      const list = await messages(op, '?type=key.expiring');
      expect(list.map((m: { data: unknown }) => m.data)).toEqual([{ key_id: key.key_id, agent_id: 'agent-x', expires_at: key.expires_at, workspace_id: op.workspaceId }]);
    });
  });

  describe('access', () => {
    it('holds every route to membership 404, role 403 (notification.manage: admin and owner) and frozen 409 (reads allowed)', async () => {
      const op = await t.signIn();
      const members = await roleMembers(t, op);
      const e = await create({ url: 'https://example.com/m', event_types: ['*'] }, op);
      const ep = (ws: string) => `/api/v1/workspaces/${ws}/notification-endpoints/${e.endpoint_id}`;
      const routes: RouteCase[] = [
        { method: 'get', path: (ws) => `/api/v1/workspaces/${ws}/notification-endpoints`, minRole: 'viewer', read: true },
        { method: 'get', path: ep, minRole: 'viewer', read: true },
        { method: 'get', path: (ws) => `${ep(ws)}/attempts`, minRole: 'viewer', read: true },
        { method: 'get', path: (ws) => `/api/v1/workspaces/${ws}/notification-messages`, minRole: 'viewer', read: true },
        { method: 'post', path: (ws) => `/api/v1/workspaces/${ws}/notification-endpoints`, body: { url: 'https://example.com/n', event_types: ['*'] }, minRole: 'admin', read: false },
        { method: 'patch', path: ep, body: { description: 'd', expected_revision: 1 }, minRole: 'admin', read: false },
        { method: 'post', path: (ws) => `${ep(ws)}/rotate-secret`, body: {}, minRole: 'admin', read: false },
        { method: 'post', path: (ws) => `${ep(ws)}/test`, minRole: 'admin', read: false },
        { method: 'post', path: (ws) => `${ep(ws)}/recover`, body: { since: new Date().toISOString() }, minRole: 'admin', read: false },
        { method: 'post', path: (ws) => `/api/v1/workspaces/${ws}/notification-messages/msg_000000000000000000000000/resend`, body: {}, minRole: 'admin', read: false },
        { method: 'delete', path: ep, minRole: 'admin', read: false },
      ];
      for (const route of routes) await expectAccessMatrix(t, op, members, route);
    });
  });
});
