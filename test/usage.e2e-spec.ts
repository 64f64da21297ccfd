import { monthStart } from 'src/modules/streams/streams.service';
import { bearer, Operator, startTestApp, TestApp } from 'test/support/app';
import { GatewayStreams, uid, usageEvent } from 'test/support/streams';

const HOUR = 3_600_000;
/** The 15th of last month, 10:00 UTC: inside retention whatever the date. */
const BASE = new Date(monthStart(new Date(), -1).getTime() + 14 * 86_400_000 + 10 * HOUR);
const at = (minutes: number) => new Date(BASE.getTime() + minutes * 60_000).toISOString();

const FIELDS = [
  'event_count', 'llm_requests', 'unpriced_count', 'usd_micros', 'tokens_in', 'tokens_out', 'tokens_cached', 'tokens_reasoning',
  'tool_calls', 'partial_count', 'failure_count',
] as const;
type Event = ReturnType<typeof usageEvent>;

/** The totals the spec defines, computed by brute force over the events. */
function expectedTotals(events: Event[]) {
  const totals = Object.fromEntries(FIELDS.map((f) => [f, 0])) as Record<(typeof FIELDS)[number], number>;
  for (const e of events) {
    totals.event_count += 1;
    totals.llm_requests += e.kind === 'llm' ? 1 : 0;
    totals.tool_calls += e.kind === 'tool' ? 1 : 0;
    totals.unpriced_count += e.pricing_status === 'unknown' ? 1 : 0;
    totals.usd_micros += e.pricing_status === 'known' ? (e.usd_micros as number) : 0;
    totals.tokens_in += e.tokens_in as number;
    totals.tokens_out += e.tokens_out as number;
    totals.tokens_cached += e.tokens_cached as number;
    totals.tokens_reasoning += e.tokens_reasoning as number;
    totals.partial_count += e.outcome === 'partial' ? 1 : 0;
    totals.failure_count += e.outcome === 'failure' ? 1 : 0;
  }
  return totals;
}

describe('usage read model', () => {
  let t: TestApp;
  let gw: GatewayStreams;
  let owner: Operator;
  let other: Operator;
  let events: Event[];

  const summary = (op: Operator, query: Record<string, string | number>, ws = op.workspaceId) =>
    t.http().get(`/api/v1/workspaces/${ws}/usage`).query(query).set(bearer(op));
  const ingest = async (...entries: (object | string)[]) => {
    await gw.add('usage', ...entries);
    return gw.pass('usage');
  };

  beforeAll(async () => {
    t = await startTestApp();
    gw = new GatewayStreams(t);
    owner = await t.signIn();
    other = await t.signIn();
    const ws = owner.workspaceId;
    events = [
      usageEvent(ws, { occurred_at: at(10), key_id: 'key_a', model: 'm1', provider: 'p1', usd_micros: 100 }),
      usageEvent(ws, { occurred_at: at(50), key_id: 'key_a', model: 'm2', provider: 'p1', pricing_status: 'unknown', usd_micros: 999, outcome: 'partial' }),
      usageEvent(ws, { occurred_at: at(70), kind: 'tool', key_id: 'key_b', model: null, provider: null, tool: 't1', usd_micros: 5, tokens_in: 0, tokens_out: 0, tokens_cached: 0, tokens_reasoning: 0, outcome: 'failure' }),
      usageEvent(ws, { occurred_at: at(2 * 24 * 60), kind: 'tool', key_id: null, model: null, provider: null, tool: 't2', usd_micros: 7, tokens_in: 0, tokens_out: 0, tokens_cached: 0, tokens_reasoning: 0 }),
      usageEvent(ws, { occurred_at: at(-3 * 24 * 60), key_id: 'key_b', model: 'm1', provider: 'p2', usd_micros: 1000, tokens_in: 500 }),
      usageEvent(ws, { occurred_at: at(125), key_id: 'key_a', model: 'm1', provider: 'p1', usd_micros: 40, tokens_out: 4 }),
    ];
    // Redelivery in the same batch and in a later one is counted once.
    expect(await ingest(...events, events[0])).toMatchObject({ projected: 7, parked: 0, failed: 0 });
    await ingest(events[0], events[5]);
  });
  afterAll(async () => {
    gw.close();
    await t.close();
  });

  describe('summary', () => {
    it.each([
      ['a wide window (rollups and edges)', -40 * 24 * 60, 40 * 24 * 60],
      ['a window inside one hour', 30, 58],
      ['a window across two partial hours', 30, 75],
      ['whole hours and partial edges', 15, 180],
      ['whole hours only', 0, 120],
      ['an empty window', 60 * 24 * 5, 60 * 24 * 6],
    ])('sums exactly over %s', async (_name, from, to) => {
      const res = await summary(owner, { from: at(from), to: at(to) }).expect(200);
      const inside = events.filter((e) => e.occurred_at >= at(from) && e.occurred_at < at(to));
      expect(res.body.totals).toEqual(expectedTotals(inside));
      expect(res.body.schema_version).toBe(1);
      expect(res.body.workspace_id).toBe(owner.workspaceId);
      expect(res.body.window).toEqual({ from: at(from), to: at(to) });
      expect(res.body.group_by).toBe('kind');
      if (inside.length === 0) {
        expect(res.body.freshness_at).toBeNull();
        expect(res.body.groups).toEqual([]);
      } else {
        expect(Date.parse(res.body.freshness_at)).toBeLessThanOrEqual(Date.now());
      }
      expect(res.body.completeness).toBe('complete');
      expect(res.headers['cache-control']).toBe('no-store');
    });

    it.each([
      ['kind', 'kind', ['llm', 'tool']],
      ['key', 'key_id', ['key_a', 'key_b', null]],
      ['model', 'model', ['m1', 'm2', null]],
      ['provider', 'provider', ['p1', 'p2', null]],
      ['tool', 'tool', ['t1', 't2', null]],
    ])('groups by %s with null last', async (groupBy, field, values) => {
      const res = await summary(owner, { from: at(-40 * 24 * 60), to: at(40 * 24 * 60), group_by: groupBy }).expect(200);
      expect(res.body.group_by).toBe(groupBy);
      expect(res.body.groups.map((g: { value: string | null }) => g.value)).toEqual(values);
      for (const group of res.body.groups) {
        expect(group.totals).toEqual(expectedTotals(events.filter((e) => (e as Record<string, unknown>)[field] === group.value)));
      }
      expect(res.body.next_cursor).toBeNull();
    });

    it('pages groups with a cursor bound to its group_by', async () => {
      const window = { from: at(-40 * 24 * 60), to: at(40 * 24 * 60) };
      const first = await summary(owner, { ...window, group_by: 'model', limit: 2 }).expect(200);
      expect(first.body.groups.map((g: { value: string }) => g.value)).toEqual(['m1', 'm2']);
      expect(first.body.totals).toEqual(expectedTotals(events));
      const second = await summary(owner, { ...window, group_by: 'model', limit: 2, cursor: first.body.next_cursor }).expect(200);
      expect(second.body.groups.map((g: { value: string | null }) => g.value)).toEqual([null]);
      expect(second.body.next_cursor).toBeNull();

      const wrong = await summary(owner, { ...window, group_by: 'tool', cursor: first.body.next_cursor }).expect(422);
      expect(wrong.body).toEqual({ detail: [{ loc: ['query', 'cursor'], msg: 'invalid cursor', type: 'value_error' }] });
      await summary(owner, { ...window, cursor: 'bm90LWEtY3Vyc29y' }).expect(422);
    });

    it('keeps totals above 2^53 exact from the stream to the JSON answer', async () => {
      const ws = await t.signIn();
      const big = (id: string, usd: string) =>
        `{"event_id":"${id}","workspace_id":"${ws.workspaceId}","kind":"llm","key_id":"key_big","model":"m","provider":"p","tool":null,` +
        `"pricing_status":"known","usd_micros":${usd},"tokens_in":${usd},"tokens_out":0,"tokens_cached":0,"tokens_reasoning":0,"outcome":"ok","occurred_at":"${at(5)}"}`;
      await ingest(big(uid('evt'), '9007199254740993'), big(uid('evt'), '9007199254740995'));
      await ingest(big(uid('evt'), '4611686018427387904'));
      for (const window of [{ from: at(1), to: at(59) }, { from: at(-60), to: at(120) }]) {
        const res = await summary(ws, { ...window, group_by: 'model' }).expect(200);
        expect(res.headers['content-type']).toMatch(/^application\/json/);
        expect(res.text).toContain('"usd_micros":4629700416936869892');
        expect(res.text).toContain('"tokens_in":4629700416936869892');
        expect(res.text).not.toContain('"4629700416936869892"');
      }
    });

    it('reports gap_detected for windows that touch a gap marker, complete otherwise', async () => {
      const ws = await t.signIn();
      await ingest({ kind: 'gap', workspace_id: ws.workspaceId, from: at(300), to: at(360) });
      expect((await summary(ws, { from: at(240), to: at(300) }).expect(200)).body.completeness).toBe('complete');
      expect((await summary(ws, { from: at(360), to: at(400) }).expect(200)).body.completeness).toBe('complete');
      expect((await summary(ws, { from: at(330), to: at(400) }).expect(200)).body.completeness).toBe('gap_detected');
      expect((await summary(ws, { from: at(0), to: at(1000) }).expect(200)).body.completeness).toBe('gap_detected');
      expect((await summary(other, { from: at(0), to: at(1000) }).expect(200)).body.completeness).toBe('complete');
    });

    it('parks a malformed usage entry, acknowledges it and records the loss as a gap', async () => {
      const ws = await t.signIn();
      const now = Date.now();
      const result = await ingest(usageEvent(ws.workspaceId, { pricing_status: 'maybe' }), usageEvent(ws.workspaceId, { occurred_at: at(1) }));
      expect(result).toMatchObject({ projected: 1, parked: 1 });
      expect(await gw.pending('usage')).toBe(0);
      const parked = await t.db.query(`SELECT reason FROM stream_parked WHERE stream = 'usage' AND workspace_id = $1`, [ws.workspaceId]);
      expect(parked).toEqual([{ reason: 'pricing_status is not an allowed value' }]);
      const around = { from: new Date(now - HOUR).toISOString(), to: new Date(now + HOUR).toISOString() };
      expect((await summary(ws, around).expect(200)).body.completeness).toBe('gap_detected');
      expect((await summary(ws, { from: at(0), to: at(60) }).expect(200)).body).toMatchObject({ completeness: 'complete', totals: { event_count: 1 } });
    });

    it('reports each budgeted key for the current calendar month: cap, spend of known prices, remaining', async () => {
      const ws = await t.signIn();
      const mint = async (budget?: number) => {
        const res = await t.http().post(`/api/v1/workspaces/${ws.workspaceId}/keys`).set(bearer(ws)).send({ agent_id: 'agent', ...(budget === undefined ? {} : { budget_micros_usd_month: budget }) });
        expect(res.status).toBe(201);
        return res.body.key_id as string;
      };
      const capped = await mint(1000);
      const exhausted = await mint(100);
      const unlimited = await mint();
      const thisMonth = new Date(monthStart(new Date()).getTime() + 1).toISOString();
      await ingest(
        usageEvent(ws.workspaceId, { key_id: capped, usd_micros: 300, occurred_at: thisMonth }),
        usageEvent(ws.workspaceId, { key_id: capped, usd_micros: 50, pricing_status: 'unknown', occurred_at: thisMonth }),
        usageEvent(ws.workspaceId, { key_id: capped, usd_micros: 10_000, occurred_at: at(0) }),
        usageEvent(ws.workspaceId, { key_id: exhausted, usd_micros: 250, occurred_at: thisMonth }),
        usageEvent(ws.workspaceId, { key_id: unlimited, usd_micros: 250, occurred_at: thisMonth }),
      );
      const res = await summary(ws, { from: at(0), to: at(1) }).expect(200);
      const period = { from: monthStart(new Date()).toISOString(), to: monthStart(new Date(), 1).toISOString() };
      expect(res.body.budgets).toEqual(
        [
          { key_id: capped, period, cap_usd_micros: 1000, spent_usd_micros: 300, remaining_usd_micros: 700 },
          { key_id: exhausted, period, cap_usd_micros: 100, spent_usd_micros: 250, remaining_usd_micros: 0 },
        ].sort((a, b) => (a.key_id < b.key_id ? -1 : 1)),
      );
    });

    it('counts each event once when concurrent passes reclaim the same pending entries', async () => {
      const ws = await t.signIn();
      const batch = [0, 1, 2, 3].map((m) => usageEvent(ws.workspaceId, { occurred_at: at(m), usd_micros: 10 }));
      await gw.add('usage', ...batch, ...batch);
      await gw.redis.xReadGroup('control', 'crashed', { key: gw.key('usage'), id: '>' }, { COUNT: 100 });
      await Promise.all([gw.pass('usage', { claimIdleMs: 0 }), gw.pass('usage', { claimIdleMs: 0 })]);
      await gw.pass('usage', { claimIdleMs: 0 });
      expect(await gw.pending('usage')).toBe(0);
      const res = await summary(ws, { from: at(0), to: at(60) }).expect(200);
      expect(res.body.totals).toMatchObject({ event_count: 4, usd_micros: 40 });
    });

    it('answers 503 Observe read model unavailable when the read model breaks its published schema', async () => {
      const ws = await t.signIn();
      await ingest(usageEvent(ws.workspaceId, { occurred_at: at(0) }));
      await t.db.query(`UPDATE usage_rollups SET event_count = -1 WHERE workspace_id = $1 AND dim = 'kind'`, [ws.workspaceId]);
      const res = await summary(ws, { from: at(-120), to: at(120) }).expect(503);
      expect(res.body).toEqual({ detail: 'Observe read model unavailable' });
    });
  });

  describe('validation', () => {
    it.each([
      ['a missing from', { to: at(1) }, ['query', 'from'], 'missing'],
      ['a missing to', { from: at(0) }, ['query', 'to'], 'missing'],
      ['an unknown group_by', { from: at(0), to: at(1), group_by: 'day' }, ['query', 'group_by'], 'enum'],
      ['limit 0', { from: at(0), to: at(1), limit: 0 }, ['query', 'limit'], 'greater_than_equal'],
      ['limit 201', { from: at(0), to: at(1), limit: 201 }, ['query', 'limit'], 'less_than_equal'],
      ['a cursor over 2048 characters', { from: at(0), to: at(1), cursor: 'a'.repeat(2049) }, ['query', 'cursor'], 'string_too_long'],
      ['a from over 64 characters', { from: 'x'.repeat(65), to: at(1) }, ['query', 'from'], 'string_too_long'],
    ])('answers 422 for %s', async (_name, query, loc, type) => {
      const res = await summary(owner, query).expect(422);
      expect(res.body.detail[0]).toMatchObject({ loc, type });
    });

    it.each([
      [{ from: at(1), to: at(0) }, 'from'],
      [{ from: at(0), to: at(0) }, 'from'],
      [{ from: '2026-01-01', to: at(0) }, 'from'],
      [{ from: at(0), to: '2026-13-01T00:00:00Z' }, 'to'],
      [{ from: '2026-01-01T00:00:00+02:00', to: at(0) }, 'from'],
    ])('answers 422 invalid UTC window for %j', async (query, field) => {
      const res = await summary(owner, query).expect(422);
      expect(res.body).toEqual({ detail: [{ loc: ['query', field], msg: 'invalid UTC window', type: 'value_error' }] });
    });
  });

  describe('authorization', () => {
    const window = { from: at(0), to: at(60) };

    it('answers 401 without a session', async () => {
      await t.http().get(`/api/v1/workspaces/${owner.workspaceId}/usage`).query(window).expect(401, { detail: 'session required' });
    });

    it('answers 404 for a non-member exactly as for a missing workspace', async () => {
      const hidden = await summary(other, window, owner.workspaceId).expect(404);
      const missing = await summary(other, window, 'ws_missing').expect(404);
      expect(hidden.body).toEqual({ detail: 'workspace not found' });
      expect(missing.body).toEqual(hidden.body);
    });

    it('lets a viewer read usage, also in a frozen workspace (usage.read is allowed while frozen)', async () => {
      const viewer = await t.member(owner, 'viewer');
      await t.db.query(`UPDATE workspaces SET frozen = true WHERE id = $1`, [owner.workspaceId]);
      try {
        const res = await summary(viewer, window).expect(200);
        expect(res.body.totals.event_count).toBe(2);
      } finally {
        await t.db.query(`UPDATE workspaces SET frozen = false WHERE id = $1`, [owner.workspaceId]);
      }
    });
  });
});
