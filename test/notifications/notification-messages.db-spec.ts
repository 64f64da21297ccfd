import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { DeliveryState } from 'src/modules/notifications/entities/notification-delivery.entity';
import { NotificationEndpoint } from 'src/modules/notifications/entities/notification-endpoint.entity';
import { NotificationEndpointsRepository } from 'src/modules/notifications/notification-endpoints.repository';
import {
  AttemptRecord,
  messageWritten,
  NewMessage,
  NotificationMessagesRepository,
} from 'src/modules/notifications/notification-messages.repository';
import { openRepositoryDatabase, RepositoryDatabase } from 'test/support/repository-database';

describe('NotificationMessagesRepository', () => {
  let db: RepositoryDatabase;
  let ds: DataSource;
  let repo: NotificationMessagesRepository;
  let endpoints: NotificationEndpointsRepository;
  let ws: string;

  const base = Date.parse('2026-03-10T12:00:00.000Z');
  const at = (s: number) => new Date(base + s * 1000);
  const NOW = at(3600);
  const UNTIL = at(3630);
  const unique = () => randomBytes(6).toString('hex');

  /** The organization and workspace the endpoints reference (tenancy's tables, written by hand here). */
  const seedWorkspace = async (): Promise<string> => {
    const suffix = unique();
    await ds.query(`INSERT INTO organizations (id) VALUES ($1)`, [`org_${suffix}`]);
    await ds.query(`INSERT INTO workspaces (id, org_id, slug, env) VALUES ($1, $2, $1, 'dev')`, [`ws_${suffix}`, `org_${suffix}`]);
    return `ws_${suffix}`;
  };
  const endpoint = async (eventTypes: string[], over: Partial<NotificationEndpoint> = {}): Promise<string> => {
    const id = `nep_${unique()}`;
    await endpoints.insert(ds.manager, {
      id,
      workspaceId: ws,
      url: `https://hooks.example.com/${id}`,
      eventTypes,
      format: 'standard',
      description: null,
      enabled: true,
      disabledReason: null,
      revision: 1,
      secret: `whsec_${id}`,
      previousSecret: null,
      previousSecretUntil: null,
      secretRotatedAt: null,
      failingSince: null,
      ...over,
    });
    return id;
  };
  const message = (over: Partial<NewMessage> = {}): NewMessage => {
    const id = `msg_${unique()}`;
    return { id, workspaceId: ws, type: 'approval.requested', body: `{"id":"${id}"}`, dedupe: null, createdAt: at(0), ...over };
  };
  /** Emits on the pool's manager; answers the message id. */
  const emit = async (over: Partial<NewMessage> = {}, endpointId?: string): Promise<string> => {
    const m = message(over);
    expect(await repo.emit(ds.manager, m, endpointId)).not.toBeNull();
    return m.id;
  };
  const delivery = async (endpointId: string, messageId: string) =>
    (await ds.query(`SELECT * FROM notification_deliveries WHERE endpoint_id = $1 AND message_id = $2`, [endpointId, messageId]))[0];
  const setDelivery = (endpointId: string, messageId: string, state: DeliveryState) =>
    ds.query(`UPDATE notification_deliveries SET state = $3 WHERE endpoint_id = $1 AND message_id = $2`, [endpointId, messageId, state]);
  const claim = (o: { now?: Date; until?: Date; busy?: string[]; rooms?: Map<string, number>; room?: number; limit?: number } = {}) =>
    repo.claim(o.now ?? NOW, o.until ?? UNTIL, o.busy ?? [], o.rooms ?? new Map(), o.room ?? 16, o.limit ?? 100);
  const pairs = (rows: { endpoint_id: string; message_id: string }[]) => rows.map((r) => [r.endpoint_id, r.message_id]);
  const attempt = (endpointId: string, messageId: string, over: Partial<AttemptRecord> = {}): AttemptRecord => ({
    workspaceId: ws,
    endpointId,
    messageId,
    type: 'approval.requested',
    attempt: 1,
    status: 'failed',
    responseStatus: 500,
    error: 'http_status',
    durationMs: 12,
    responseExcerpt: 'oops',
    attemptedAt: NOW,
    ...over,
  });

  beforeAll(async () => {
    db = await openRepositoryDatabase();
    ds = db.dataSource;
    repo = new NotificationMessagesRepository(ds);
    endpoints = new NotificationEndpointsRepository(ds);
  });
  beforeEach(async () => {
    ws = await seedWorkspace();
    // The claim reads every workspace: earlier tests' deliveries must not be claimable by this one.
    await ds.query(`DELETE FROM notification_deliveries`);
  });
  afterAll(() => db.close());

  describe('emit', () => {
    it('writes the message and a pending delivery to every enabled endpoint of the workspace whose patterns take the type', async () => {
      const star = await endpoint(['*']);
      const prefix = await endpoint(['approval.*']);
      const exact = await endpoint(['approval.requested']);
      await endpoint(['key.*']);
      await endpoint(['*'], { enabled: false, disabledReason: 'operator' });
      const m = message({ createdAt: at(5) });
      const other = ws;
      ws = await seedWorkspace();
      await endpoint(['*']);
      ws = other;

      const emitted = await repo.emit(ds.manager, m);
      expect(emitted).toEqual({ seq: expect.stringMatching(/^\d+$/), deliveries: 3 });
      expect(await repo.find(ws, m.id)).toEqual({ id: m.id, workspace_id: ws, seq: emitted!.seq, type: m.type, body: m.body, created_at: at(5) });
      const rows = await ds.query(`SELECT endpoint_id, workspace_id, state, attempts, next_attempt_at, last_attempt_at, claimed_until
                                   FROM notification_deliveries WHERE message_id = $1 ORDER BY endpoint_id`, [m.id]);
      expect(rows).toEqual(
        [star, prefix, exact].sort().map((endpoint_id) => ({
          endpoint_id, workspace_id: ws, state: 'pending', attempts: 0, next_attempt_at: at(5), last_attempt_at: null, claimed_until: null,
        })),
      );
    });

    it('gives audit.event only to endpoints naming it (not * nor audit.*)', async () => {
      await endpoint(['*']);
      await endpoint(['audit.*']);
      const named = await endpoint(['audit.event', 'key.*']);
      const m = message({ type: 'audit.event' });
      expect((await repo.emit(ds.manager, m))?.deliveries).toBe(1);
      expect(await repo.addressedTo(ds.manager, ws, m.id)).toEqual([named]);
    });

    it('to one endpoint: only that one, whatever its patterns, and none when it is disabled', async () => {
      await endpoint(['*']);
      const target = await endpoint(['key.*']);
      const m = message({ type: 'notification.test' });
      expect((await repo.emit(ds.manager, m, target))?.deliveries).toBe(1);
      expect(await repo.addressedTo(ds.manager, ws, m.id)).toEqual([target]);

      const disabled = await endpoint(['*'], { enabled: false, disabledReason: 'operator' });
      const n = message({ type: 'notification.test' });
      expect((await repo.emit(ds.manager, n, disabled))?.deliveries).toBe(0);
      expect(await repo.seqOf(ws, n.id)).not.toBeNull();
    });

    it('dedupes per workspace: a second emit with the same key writes nothing and answers null; null keys never collide', async () => {
      const e = await endpoint(['*']);
      const first = message({ dedupe: { key: 'key.expiring:k1:2026-12-03', until: at(86_400) } });
      expect((await repo.emit(ds.manager, first))?.deliveries).toBe(1);
      const again = message({ dedupe: { key: 'key.expiring:k1:2026-12-03', until: at(86_400) }, body: '{"second":true}' });
      expect(await repo.emit(ds.manager, again)).toBeNull();
      expect(await repo.find(ws, again.id)).toBeUndefined();
      expect(await ds.query(`SELECT message_id FROM notification_deliveries WHERE endpoint_id = $1`, [e])).toEqual([{ message_id: first.id }]);

      const other = ws;
      ws = await seedWorkspace();
      expect(await repo.emit(ds.manager, message({ dedupe: { key: 'key.expiring:k1:2026-12-03', until: at(86_400) } }))).toEqual({ seq: expect.any(String), deliveries: 0 });
      ws = other;
      expect(await repo.emit(ds.manager, message())).not.toBeNull();
      expect(await repo.emit(ds.manager, message())).not.toBeNull();
    });

    it('writes in the caller transaction: a rollback leaves neither message nor delivery', async () => {
      const e = await endpoint(['*']);
      const m = message();
      await expect(
        ds.transaction(async (manager) => {
          expect((await repo.emit(manager, m))?.deliveries).toBe(1);
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      expect(await repo.find(ws, m.id)).toBeUndefined();
      expect(await delivery(e, m.id)).toBeUndefined();
    });
  });

  describe('reads', () => {
    it('finds, seqOf and deliveriesOf within the workspace', async () => {
      const e1 = await endpoint(['*']);
      const e2 = await endpoint(['*']);
      const m = await emit({ createdAt: at(1) });
      const seq = await repo.seqOf(ws, m);
      expect(seq).toMatch(/^\d+$/);
      expect((await repo.find(ws, m))?.seq).toBe(seq);
      const other = await seedWorkspace();
      expect(await repo.find(other, m)).toBeUndefined();
      expect(await repo.seqOf(other, m)).toBeNull();
      expect(await repo.seqOf(ws, 'msg_missing')).toBeNull();
      expect(await repo.deliveriesOf(ws, [m, 'msg_missing'])).toEqual(
        [e1, e2].sort().map((endpoint_id) => ({ message_id: m, endpoint_id, state: 'pending', attempts: 0, last_attempt_at: null, next_attempt_at: at(1) })),
      );
      expect(await repo.deliveriesOf(other, [m])).toEqual([]);
      expect(await repo.deliveriesOf(ws, [])).toEqual([]);
    });

    it('lists newest first with keyset pages over (created_at, seq), emission order within one instant, a half-open window and a type', async () => {
      const a = await emit({ id: 'msg_a', createdAt: at(10) });
      const b = await emit({ id: 'msg_b', createdAt: at(20), type: 'key.revoked' });
      const c = await emit({ id: 'msg_c', createdAt: at(20) });
      const d = await emit({ id: 'msg_d', createdAt: at(30) });
      const ids = (rows: { id: string }[]) => rows.map((r) => r.id);
      const seq = async (id: string) => String(await repo.seqOf(ws, id));

      expect(ids(await repo.list(ws, { limit: 10 }))).toEqual([d, c, b, a]);
      const page1 = await repo.list(ws, { limit: 2 });
      expect(ids(page1)).toEqual([d, c]);
      const last = page1[1];
      expect(ids(await repo.list(ws, { limit: 2, after: { at: last.created_at, seq: String(last.seq) } }))).toEqual([b, a]);
      expect(ids(await repo.list(ws, { limit: 2, after: { at: at(10), seq: await seq(a) } }))).toEqual([]);
      expect(ids(await repo.list(ws, { limit: 10, from: at(10), to: at(30) }))).toEqual([c, b, a]);
      expect(ids(await repo.list(ws, { limit: 10, type: 'key.revoked' }))).toEqual([b]);
      expect(ids(await repo.list(ws, { limit: 10, type: 'approval.requested', from: at(20), to: at(31), after: { at: at(30), seq: await seq(d) } }))).toEqual([c]);
      expect(await repo.list(await seedWorkspace(), { limit: 10 })).toEqual([]);
      // Two messages of one instant list in emission order (newest emitted first), whatever their ids.
      const other = await seedWorkspace();
      const first = await emit({ id: 'msg_z_first', workspaceId: other, createdAt: at(50) });
      const second = await emit({ id: 'msg_a_second', workspaceId: other, createdAt: at(50) });
      expect(ids(await repo.list(other, { limit: 10 }))).toEqual([second, first]);
      const head = (await repo.list(other, { limit: 1 }))[0];
      expect(ids(await repo.list(other, { limit: 10, after: { at: head.created_at, seq: String(head.seq) } }))).toEqual([first]);
      // A lone bound is not applied (the edge refuses one without the other).
      expect(ids(await repo.list(ws, { limit: 10, from: at(25) }))).toEqual([d, c, b, a]);
    });

    it('replays after a seq in seq order, a page at a time', async () => {
      const m1 = await emit({ createdAt: at(50) });
      const m2 = await emit({ createdAt: at(1) });
      const m3 = await emit({ createdAt: at(25) });
      const s1 = (await repo.seqOf(ws, m1))!;
      expect((await repo.after(ws, '0', 10)).map((r) => r.id)).toEqual([m1, m2, m3]);
      expect((await repo.after(ws, s1, 1)).map((r) => r.id)).toEqual([m2]);
      expect((await repo.after(ws, (await repo.seqOf(ws, m3))!, 10))).toEqual([]);
      expect(await repo.after(await seedWorkspace(), '0', 10)).toEqual([]);
    });
  });

  describe('claim', () => {
    it('claims due pending rows to enabled endpoints, oldest due first, with what the attempt needs, under a lease', async () => {
      const e = await endpoint(['*'], { format: 'slack', previousSecret: 'whsec_old', previousSecretUntil: at(7200) });
      const late = await emit({ createdAt: at(20) });
      const early = await emit({ createdAt: at(10), type: 'key.revoked' });
      await emit({ createdAt: at(7200) }); // not due yet
      const delivered = await emit({ createdAt: at(1) });
      await setDelivery(e, delivered, 'delivered');
      const off = await endpoint(['*']);
      await emit({ createdAt: at(0) }, off);
      await endpoints.disable(ds.manager, off, 'failing');

      const claimed = await claim();
      expect(claimed).toEqual([
        {
          endpoint_id: e, message_id: early, workspace_id: ws, attempts: 0, type: 'key.revoked', body: `{"id":"${early}"}`,
          url: `https://hooks.example.com/${e}`, format: 'slack', secret: `whsec_${e}`, previous_secret: 'whsec_old',
          previous_secret_until: at(7200), scanned: 2,
        },
        expect.objectContaining({ endpoint_id: e, message_id: late, type: 'approval.requested', scanned: 2 }),
      ]);
      expect((await delivery(e, early)).claimed_until).toEqual(UNTIL);
      expect((await delivery(e, early)).state).toBe('pending');

      // Leased: not claimable until the lease has passed (strictly).
      expect(await claim({ now: new Date(NOW.getTime() + 10_000) })).toEqual([]);
      expect(await claim({ now: new Date(NOW.getTime() - 1) })).toEqual([]);
      expect(await claim({ now: UNTIL })).toEqual([]);
      const later = new Date(UNTIL.getTime() + 1);
      expect(pairs(await claim({ now: later, until: new Date(later.getTime() + 30_000) }))).toEqual([[e, early], [e, late]]);
    });

    it('skips a row another open transaction holds (SKIP LOCKED) instead of waiting, and does not count it as scanned', async () => {
      const e = await endpoint(['*']);
      const held = await emit({ createdAt: at(1) });
      const free = await emit({ createdAt: at(2) });
      const runner = ds.createQueryRunner();
      await runner.connect();
      try {
        await runner.startTransaction();
        await runner.query(`SELECT 1 FROM notification_deliveries WHERE endpoint_id = $1 AND message_id = $2 FOR UPDATE`, [e, held]);
        const claimed = await claim();
        expect(pairs(claimed)).toEqual([[e, free]]);
        expect(claimed[0].scanned).toBe(1);
        await runner.rollbackTransaction();
      } finally {
        await runner.release();
      }
      expect(pairs(await claim())).toEqual([[e, held]]);
    });

    it('two claims at once never take the same delivery', async () => {
      const e = await endpoint(['*']);
      const ids: string[] = [];
      for (let i = 0; i < 20; i++) ids.push(await emit({ createdAt: at(i) }));
      const [x, y] = await Promise.all([claim({ limit: 20, room: 20 }), claim({ limit: 20, room: 20 })]);
      const taken = [...x, ...y].map((r) => r.message_id);
      expect(new Set(taken).size).toBe(taken.length);
      expect([...x, ...y].every((r) => r.endpoint_id === e)).toBe(true);
      expect(taken.sort()).toEqual(ids.sort());
    });

    it('gives each endpoint at most its room (rooms, else room), and scanned counts the due rows looked at', async () => {
      const a = await endpoint(['*']);
      const b = await endpoint(['*']);
      const aIds: string[] = [];
      const bIds: string[] = [];
      for (let i = 0; i < 3; i++) {
        aIds.push(await emit({ createdAt: at(10 + i) }, a));
        bIds.push(await emit({ createdAt: at(20 + i) }, b));
      }
      const first = await claim({ room: 2, rooms: new Map([[a, 1]]) });
      expect(pairs(first)).toEqual([[a, aIds[0]], [b, bIds[0]], [b, bIds[1]]]);
      expect(first.map((r) => r.scanned)).toEqual([6, 6, 6]);
      // The rest: A's two, and B's last (room 2).
      expect(pairs(await claim({ room: 2 }))).toEqual([[a, aIds[1]], [a, aIds[2]], [b, bIds[2]]]);
    });

    it('scans at most limit due rows, oldest first, so a backlog of one endpoint can keep another out of a claim', async () => {
      const a = await endpoint(['*']);
      const b = await endpoint(['*']);
      const aIds = [await emit({ createdAt: at(1) }, a), await emit({ createdAt: at(2) }, a), await emit({ createdAt: at(3) }, a)];
      const bId = await emit({ createdAt: at(4) }, b);
      const claimed = await claim({ room: 1, limit: 3 });
      // Three due rows scanned (all A's), A's room is 1: B's row, behind them, is not reached.
      expect(pairs(claimed)).toEqual([[a, aIds[0]]]);
      expect(claimed[0].scanned).toBe(3);
      // Rows scanned but not taken are free again: the next claim reaches them.
      expect(pairs(await claim({ room: 1, limit: 3 }))).toEqual([[a, aIds[1]], [b, bId]]);
      // A claim that takes nothing answers no rows (and so no scanned count).
      expect(await claim({ room: 0 })).toEqual([]);
    });

    it('passes busy endpoints over', async () => {
      const a = await endpoint(['*']);
      const b = await endpoint(['*']);
      await emit({ createdAt: at(1) }, a);
      const bId = await emit({ createdAt: at(2) }, b);
      const claimed = await claim({ busy: [a] });
      expect(pairs(claimed)).toEqual([[b, bId]]);
      expect(claimed[0].scanned).toBe(1);
    });

    it("leaving busy endpoints out, takes the others' due rows oldest first, each at most its room, under the limit, never a leased, future or disabled one", async () => {
      const busy = await endpoint(['*']);
      const a = await endpoint(['*']);
      const b = await endpoint(['*']);
      const off = await endpoint(['*']);
      for (let i = 0; i < 5; i++) await emit({ createdAt: at(i) }, busy);
      const aIds = [await emit({ createdAt: at(10) }, a), await emit({ createdAt: at(12) }, a), await emit({ createdAt: at(14) }, a)];
      const bIds = [await emit({ createdAt: at(11) }, b), await emit({ createdAt: at(13) }, b)];
      await emit({ createdAt: at(7200) }, b); // not due at NOW
      await emit({ createdAt: at(15) }, off);
      await ds.query(`UPDATE notification_endpoints SET enabled = false WHERE id = $1`, [off]);
      await ds.query(`UPDATE notification_deliveries SET claimed_until = $2 WHERE message_id = $1`, [aIds[0], UNTIL]);

      const claimed = await claim({ busy: [busy], room: 1, rooms: new Map([[b, 2]]), limit: 3 });
      // A's first is leased: its second is its one (room 1); B takes two; the limit of 3 is met.
      expect(pairs(claimed)).toEqual([[b, bIds[0]], [a, aIds[1]], [b, bIds[1]]]);
      expect(claimed[0].scanned).toBe(3);
      expect(await claim({ busy: [busy, a], limit: 3 })).toEqual([]);
      const rest = await claim({ busy: [b] });
      expect(rest.map((r) => r.endpoint_id)).toEqual([busy, busy, busy, busy, busy, a]);
      expect(rest[5].message_id).toBe(aIds[2]);
    });

    it('release makes claimed pending deliveries claimable at once; a settled one keeps its state', async () => {
      const e = await endpoint(['*']);
      const m1 = await emit({ createdAt: at(1) });
      const m2 = await emit({ createdAt: at(2) });
      const m3 = await emit({ createdAt: at(3) });
      const claimed = await claim();
      expect(claimed).toHaveLength(3);
      await setDelivery(e, m3, 'delivered');
      await repo.release(claimed.filter((c) => c.message_id !== m2));
      expect((await delivery(e, m1)).claimed_until).toBeNull();
      expect((await delivery(e, m2)).claimed_until).toEqual(UNTIL);
      expect(await delivery(e, m3)).toMatchObject({ state: 'delivered', claimed_until: UNTIL });
      expect(pairs(await claim())).toEqual([[e, m1]]);
      await repo.release([]);
    });
  });

  describe('settle', () => {
    it('writes the attempt rows, moves each delivery and starts the failing streak at the first failure', async () => {
      const e = await endpoint(['*']);
      const m = await emit({ createdAt: at(1) });
      await claim();
      const retryAt = at(3605);
      const failing = await repo.settle([{ attempt: attempt(e, m, { attemptedAt: at(3600) }), next: { state: 'pending', nextAttemptAt: retryAt } }]);
      expect(failing).toEqual(new Map([[e, at(3600)]]));
      expect(await delivery(e, m)).toMatchObject({ state: 'pending', attempts: 1, last_attempt_at: at(3600), next_attempt_at: retryAt, claimed_until: null });
      const rows = await ds.query(`SELECT * FROM notification_attempts WHERE endpoint_id = $1`, [e]);
      expect(rows).toEqual([{
        id: expect.stringMatching(/^nat_/), workspace_id: ws, endpoint_id: e, message_id: m, type: 'approval.requested', attempt: 1,
        status: 'failed', response_status: 500, error: 'http_status', duration_ms: 12, response_excerpt: 'oops', attempted_at: at(3600),
      }]);
      expect((await endpoints.find(ws, e))?.failingSince).toEqual(at(3600));

      // A later failure keeps the streak's start; the last attempt fails the delivery for good.
      const again = await repo.settle([
        { attempt: attempt(e, m, { attempt: 2, attemptedAt: at(3700), error: 'timeout', responseStatus: null }), next: { state: 'failed', nextAttemptAt: null } },
      ]);
      expect(again).toEqual(new Map([[e, at(3600)]]));
      expect(await delivery(e, m)).toMatchObject({ state: 'failed', attempts: 2, last_attempt_at: at(3700), next_attempt_at: null });
      expect(await ds.query(`SELECT count(*)::int AS n FROM notification_attempts WHERE endpoint_id = $1`, [e])).toEqual([{ n: 2 }]);
    });

    it('a success clears the streak; within one batch the latest success decides, a failure after it starts a new streak', async () => {
      const e = await endpoint(['*'], { failingSince: at(100) });
      const f = await endpoint(['*']);
      const quiet = await endpoint(['*']);
      const [m1, m2, m3] = [await emit({ createdAt: at(1) }), await emit({ createdAt: at(2) }), await emit({ createdAt: at(3) })];
      const ok = (ep: string, m: string, s: number) => ({
        attempt: attempt(ep, m, { status: 'succeeded', responseStatus: 204, error: null, attemptedAt: at(s) }),
        next: { state: 'delivered' as const, nextAttemptAt: null },
      });
      const fail = (ep: string, m: string, s: number) => ({
        attempt: attempt(ep, m, { attemptedAt: at(s) }),
        next: { state: 'pending' as const, nextAttemptAt: at(s + 5) },
      });

      // e: fail at 3600, success at 3601 (cleared). f: success at 3600, fail at 3601 (failing since 3601). quiet: success only.
      const failing = await repo.settle([fail(e, m1, 3600), ok(e, m2, 3601), ok(f, m1, 3600), fail(f, m2, 3601), ok(quiet, m3, 3600)]);
      expect(failing).toEqual(new Map([[f, at(3601)]]));
      expect((await endpoints.find(ws, e))?.failingSince).toBeNull();
      expect((await endpoints.find(ws, f))?.failingSince).toEqual(at(3601));
      expect((await endpoints.find(ws, quiet))?.failingSince).toBeNull();
      expect(await delivery(e, m2)).toMatchObject({ state: 'delivered', attempts: 1, next_attempt_at: null });
      expect(await ds.query(`SELECT count(*)::int AS n FROM notification_attempts WHERE message_id = ANY($1)`, [[m1, m2, m3]])).toEqual([{ n: 5 }]);
    });

    it('writes nothing for a delivery whose endpoint was deleted meanwhile', async () => {
      const e = await endpoint(['*']);
      const m = await emit();
      await endpoints.delete(ds.manager, ws, e);
      expect(await repo.settle([{ attempt: attempt(e, m), next: { state: 'pending', nextAttemptAt: at(5) } }])).toEqual(new Map());
      expect(await ds.query(`SELECT * FROM notification_attempts WHERE message_id = $1`, [m])).toEqual([]);
    });
  });

  describe('redelivery', () => {
    it('requeueFailed: failed deliveries to the endpoint of messages since `since` are pending again on a fresh schedule', async () => {
      const e = await endpoint(['*']);
      const other = await endpoint(['*']);
      const old = await emit({ createdAt: at(1) });
      const recent = await emit({ createdAt: at(100) });
      const delivered = await emit({ createdAt: at(200) });
      for (const m of [old, recent]) {
        await ds.query(
          `UPDATE notification_deliveries SET state = 'failed', attempts = 8, next_attempt_at = NULL, claimed_until = $2 WHERE message_id = $1`,
          [m, UNTIL],
        );
      }
      await setDelivery(e, delivered, 'delivered');

      expect(await repo.requeueFailed(ds.manager, ws, e, at(100), NOW)).toBe(1);
      expect(await delivery(e, recent)).toMatchObject({ state: 'pending', attempts: 0, next_attempt_at: NOW, claimed_until: null });
      expect(await delivery(e, old)).toMatchObject({ state: 'failed', attempts: 8 });
      expect(await delivery(other, recent)).toMatchObject({ state: 'failed', attempts: 8 });
      expect(await delivery(e, delivered)).toMatchObject({ state: 'delivered' });
      expect(await repo.requeueFailed(ds.manager, ws, e, at(100), NOW)).toBe(0);
      expect(await repo.requeueFailed(ds.manager, await seedWorkspace(), other, at(0), NOW)).toBe(0);
    });

    it('requeue: resets existing deliveries and makes one where none existed; addressedTo lists the endpoints', async () => {
      const had = await endpoint(['*']);
      const m = await emit({ createdAt: at(1) });
      const added = await endpoint(['key.*']);
      await ds.query(`UPDATE notification_deliveries SET state = 'delivered', attempts = 3, claimed_until = $2 WHERE message_id = $1`, [m, UNTIL]);
      expect(await repo.addressedTo(ds.manager, ws, m)).toEqual([had]);

      await repo.requeue(ds.manager, ws, m, [had, added], NOW);
      expect(await delivery(had, m)).toMatchObject({ state: 'pending', attempts: 0, next_attempt_at: NOW, claimed_until: null });
      expect(await delivery(added, m)).toMatchObject({ workspace_id: ws, state: 'pending', attempts: 0, next_attempt_at: NOW, last_attempt_at: null });
      expect((await repo.addressedTo(ds.manager, ws, m)).sort()).toEqual([had, added].sort());
      expect(await repo.addressedTo(ds.manager, await seedWorkspace(), m)).toEqual([]);
      expect(await repo.addressedTo(ds.manager, ws, 'msg_missing')).toEqual([]);
    });
  });

  it('attempts: newest first, keyset over (attempted_at, id), with a status filter, of one endpoint', async () => {
    const e = await endpoint(['*']);
    const other = await endpoint(['*']);
    const [m1, m2, m3] = [await emit(), await emit(), await emit()];
    await repo.settle([
      { attempt: attempt(e, m1, { attemptedAt: at(10) }), next: { state: 'pending', nextAttemptAt: at(15) } },
      {
        attempt: attempt(e, m2, { attemptedAt: at(20), status: 'succeeded', error: null, responseStatus: 200 }),
        next: { state: 'delivered', nextAttemptAt: null },
      },
      { attempt: attempt(e, m3, { attemptedAt: at(20) }), next: { state: 'pending', nextAttemptAt: at(25) } },
      { attempt: attempt(other, m1, { attemptedAt: at(30) }), next: { state: 'pending', nextAttemptAt: at(35) } },
    ]);
    const all = await repo.attempts(ws, e, { limit: 10 });
    expect(all.map((a) => a.attemptedAt)).toEqual([at(20), at(20), at(10)]);
    expect(all[0].id > all[1].id).toBe(true);
    expect(all[2]).toMatchObject({
      workspaceId: ws, endpointId: e, messageId: m1, status: 'failed', responseStatus: 500, error: 'http_status', durationMs: 12,
    });

    const page = await repo.attempts(ws, e, { limit: 1 });
    expect(page.map((a) => a.id)).toEqual([all[0].id]);
    expect((await repo.attempts(ws, e, { limit: 5, after: { at: page[0].attemptedAt, id: page[0].id } })).map((a) => a.id)).toEqual([all[1].id, all[2].id]);
    expect((await repo.attempts(ws, e, { limit: 5, status: 'failed' })).map((a) => a.messageId).sort()).toEqual([m1, m3].sort());
    expect((await repo.attempts(ws, e, { limit: 5, status: 'succeeded' })).map((a) => a.messageId)).toEqual([m2]);
    expect(await repo.attempts(await seedWorkspace(), e, { limit: 5 })).toEqual([]);
  });

  it('purge drops messages (with their deliveries) and attempts older than the bound, keeps the rest', async () => {
    const e = await endpoint(['*']);
    const old = await emit({ createdAt: at(1) });
    const young = await emit({ createdAt: at(100) });
    await repo.settle([
      { attempt: attempt(e, old, { attemptedAt: at(50) }), next: { state: 'pending', nextAttemptAt: at(55) } },
      { attempt: attempt(e, young, { attemptedAt: at(150) }), next: { state: 'pending', nextAttemptAt: at(155) } },
    ]);
    await repo.purge(at(100), at(200));
    expect(await repo.find(ws, old)).toBeUndefined();
    expect(await delivery(e, old)).toBeUndefined();
    expect((await repo.find(ws, young))?.id).toBe(young);
    expect(await delivery(e, young)).toMatchObject({ state: 'pending' });
    expect((await repo.attempts(ws, e, { limit: 10 })).map((a) => a.messageId)).toEqual([young]);
  });

  it('purge keeps a message older than the bound while its dedupe key can recur, and drops it once it cannot', async () => {
    const e = await endpoint(['*']);
    const live = message({ createdAt: at(1), dedupe: { key: 'budget:key_1:50:2026-03', until: at(300) } });
    const done = message({ createdAt: at(1), dedupe: { key: 'key.expiring:k2:2026-03-10', until: at(200) } });
    await repo.emit(ds.manager, live);
    await repo.emit(ds.manager, done);
    await repo.purge(at(100), at(200));
    expect((await repo.find(ws, live.id))?.id).toBe(live.id);
    expect(await delivery(e, live.id)).toMatchObject({ state: 'pending' });
    expect(await repo.find(ws, done.id)).toBeUndefined();
    // The kept key still dedupes.
    expect(await repo.emit(ds.manager, message({ createdAt: at(250), dedupe: live.dedupe }))).toBeNull();
    await repo.purge(at(100), at(300));
    expect(await repo.find(ws, live.id)).toBeUndefined();
  });

  it('refuses a dedupe key without its instant, and an instant without a key', async () => {
    const insert = (key: string | null, until: Date | null) =>
      ds.query(`INSERT INTO notification_messages (id, workspace_id, type, body, dedupe_key, dedupe_until, created_at) VALUES ($1, $2, 'key.expiring', '{}', $3, $4, now())`, [
        `msg_${unique()}`, ws, key, until,
      ]);
    await expect(insert('key.expiring:k3:x', null)).rejects.toThrow(/notification_messages_dedupe_until/);
    await expect(insert(null, at(1))).rejects.toThrow(/notification_messages_dedupe_until/);
  });

  it('messageWritten: a fragment answering whether the workspace has a message with that dedupe key', async () => {
    await emit({ dedupe: { key: 'budget:key_1:80:2026-03', until: at(86_400) } });
    const written = async (workspaceId: string, key: string) =>
      (await ds.query(`SELECT ${messageWritten('$1', '$2')} AS written`, [workspaceId, key]))[0].written;
    expect(await written(ws, 'budget:key_1:80:2026-03')).toBe(true);
    expect(await written(ws, 'budget:key_1:100:2026-03')).toBe(false);
    expect(await written(await seedWorkspace(), 'budget:key_1:80:2026-03')).toBe(false);
  });
});
