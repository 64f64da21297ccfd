import fc from 'fast-check';
import { monthStart, StreamsService } from 'src/modules/streams/streams.service';
import { UsageProjector } from 'src/modules/usage/usage.projector';
import { bearer, Operator, startTestApp, TestApp } from 'test/support/app';
import { corruptUsageRollups, freezeWorkspace } from 'test/support/factories';
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
      await corruptUsageRollups(t, ws.workspaceId);
      const res = await summary(ws, { from: at(-120), to: at(120) }).expect(503);
      expect(res.body).toEqual({ detail: 'Observe read model unavailable' });
    });
  });

  describe('summary over hours, minutes and raw edges', () => {
    const DIMS = { kind: 'kind', key: 'key_id', model: 'model', provider: 'provider', tool: 'tool' } as const;
    /** Every total, overall and per group value, equals the brute-force sum of the events inside. */
    const expectExact = async (ws: Operator, all: Event[], from: string, to: string, groupBy: keyof typeof DIMS) => {
      const res = await summary(ws, { from, to, group_by: groupBy, limit: 200 }).expect(200);
      const inside = all.filter((e) => e.occurred_at >= from && e.occurred_at < to);
      expect(res.body.totals).toEqual(expectedTotals(inside));
      const values = [...new Set(inside.map((e) => (e as Record<string, unknown>)[DIMS[groupBy]] as string | null))];
      expect(res.body.groups).toEqual(
        values
          .sort((a, b) => (a === null ? 1 : b === null ? -1 : Buffer.compare(Buffer.from(a), Buffer.from(b))))
          .map((value) => ({ value, totals: expectedTotals(inside.filter((e) => (e as Record<string, unknown>)[DIMS[groupBy]] === value)) })),
      );
    };
    /** A time `ms` after BASE (within three hours either side), to the millisecond. */
    const offset = fc.integer({ min: -3 * HOUR, max: 3 * HOUR });
    const time = (ms: number) => new Date(BASE.getTime() + ms).toISOString();
    /** Events clustered on a few minutes (so minutes and hours hold several) and spread over six hours. */
    const eventArb = (ws: string) =>
      fc
        .record({
          at: fc.oneof(offset, fc.constantFrom(-HOUR, 0, 59_999, 60_000, HOUR - 1, HOUR).chain((c) => fc.integer({ min: c - 90_000, max: c + 90_000 }))),
          kind: fc.constantFrom('llm', 'tool'),
          key: fc.constantFrom('key_a', 'key_b', null),
          model: fc.constantFrom('m1', 'm2', null),
          pricing: fc.constantFrom('known', 'unknown'),
          outcome: fc.constantFrom('ok', 'partial', 'failure'),
          usd: fc.integer({ min: 0, max: 1_000_000 }),
          tokens: fc.integer({ min: 0, max: 10_000 }),
        })
        .map((r) =>
          usageEvent(ws, {
            occurred_at: time(r.at), kind: r.kind, key_id: r.key, model: r.model, provider: r.model && `p_${r.model}`, tool: r.kind === 'tool' ? 't1' : null,
            pricing_status: r.pricing, outcome: r.outcome, usd_micros: r.usd, tokens_in: r.tokens, tokens_out: r.tokens + 1, tokens_cached: r.tokens % 7, tokens_reasoning: r.tokens % 3,
          }),
        );
    /** Windows whose edges fall on hours, on minutes, inside a minute, or anywhere; some hold no event. */
    const edge = fc.oneof(
      offset,
      fc.integer({ min: -3, max: 3 }).map((h) => h * HOUR),
      fc.integer({ min: -180, max: 180 }).map((m) => m * 60_000),
      fc.integer({ min: -180, max: 180 }).chain((m) => fc.integer({ min: 1, max: 59_999 }).map((ms) => m * 60_000 + ms)),
    );
    const windowArb = fc.tuple(edge, edge).filter(([a, b]) => a !== b).map(([a, b]) => (a < b ? [a, b] : [b, a]));
    const groupArb = fc.constantFrom(...(Object.keys(DIMS) as (keyof typeof DIMS)[]));

    it('sums exactly for any window, each event set ingested in several batches', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.context(),
          fc.integer({ min: 1, max: 3 }),
          fc.array(fc.tuple(windowArb, groupArb), { minLength: 8, maxLength: 8 }),
          fc.integer({ min: 0, max: 2 ** 31 - 1 }),
          async (ctx, batches, windows, seed) => {
            const ws = await t.signIn();
            const all = fc.sample(fc.array(eventArb(ws.workspaceId), { minLength: 0, maxLength: 60 }), { seed, numRuns: 1 })[0];
            ctx.log(`${all.length} events in ${batches} batches`);
            for (let b = 0; b < batches; b++) {
              const part = all.filter((_, i) => i % batches === b);
              if (part.length > 0) await ingest(...part);
            }
            for (const [[from, to], groupBy] of windows) await expectExact(ws, all, time(from), time(to), groupBy);
          },
        ),
        { numRuns: 12 },
      );
    });

    it('sums exactly over windows that start and end inside one minute, an hour, or touch no event', async () => {
      const ws = await t.signIn();
      const all = [0, 1, 59_999, 60_000, 61_500, HOUR - 1, HOUR, HOUR + 30_000, 2 * HOUR + 59 * 60_000 + 59_999].map((ms, i) =>
        usageEvent(ws.workspaceId, { occurred_at: time(ms), usd_micros: 10 + i, model: i % 2 ? 'm1' : null }),
      );
      await ingest(...all);
      for (const [from, to] of [
        [1, 59_999], [1, 60_000], [0, 1], [59_999, 61_500], [61_000, 62_000], [30_000, HOUR + 30_001], [HOUR - 1, HOUR + 1],
        [-HOUR, -1], [-90_000, -30_000], [30 * 60_000 + 1, 31 * 60_000 - 1], [HOUR + 30_001, 2 * HOUR + 59 * 60_000 + 59_999], [2 * HOUR, 3 * HOUR],
      ]) {
        await expectExact(ws, all, time(from), time(to), 'model');
      }
    });

    it('sums exactly over windows ending now, reaching into the future, and wholly in the future', async () => {
      const ws = await t.signIn();
      const now = Date.now();
      const all = [-2 * HOUR - 1, -HOUR + 5, -61_000, -60_000, -1_500, -1].map((ms, i) =>
        usageEvent(ws.workspaceId, { occurred_at: new Date(now + ms).toISOString(), usd_micros: 100 + i }),
      );
      await ingest(...all);
      const around = (a: number, b: number) => [new Date(now + a).toISOString(), new Date(now + b).toISOString()] as const;
      for (const [from, to] of [
        around(-HOUR, 0), around(-HOUR, 60_000), around(-24 * HOUR, 0), around(-30 * 24 * HOUR + 17 * 60_000, 0),
        around(-HOUR, HOUR), around(1, HOUR), around(HOUR, 3 * HOUR), around(24 * HOUR, 48 * HOUR),
      ]) {
        await expectExact(ws, all, from, to, 'kind');
      }
    });

    it('rolls each inserted event up once per minute and per hour, in the same statement as the event', async () => {
      const ws = await t.signIn();
      const first = usageEvent(ws.workspaceId, { occurred_at: time(61_000), usd_micros: 5, model: 'm1' });
      const second = usageEvent(ws.workspaceId, { occurred_at: time(119_999), usd_micros: 7, model: 'm1' });
      const third = usageEvent(ws.workspaceId, { occurred_at: time(120_000), usd_micros: 11, model: null });
      await ingest(first, second, third, first);
      await ingest(second);
      const minutes = await t.db.query(
        `SELECT bucket, kind, key_id, model, provider, tool, event_count::int, usd_micros::int FROM usage_minute_rollups WHERE workspace_id = $1 ORDER BY bucket, model NULLS LAST`,
        [ws.workspaceId],
      );
      // One minute row per combination of the dimensions' values (the events differ only in model).
      const combination = (e: Event) => ({ kind: e.kind, key_id: e.key_id ?? null, model: e.model ?? null, provider: e.provider ?? null, tool: e.tool ?? null });
      expect(minutes).toEqual([
        { bucket: new Date(time(60_000)), ...combination(first), event_count: 2, usd_micros: 12 },
        { bucket: new Date(time(120_000)), ...combination(third), event_count: 1, usd_micros: 11 },
      ]);
      const hours = await t.db.query(
        `SELECT dim, bucket, value, event_count::int, usd_micros::int FROM usage_rollups WHERE workspace_id = $1 ORDER BY dim, value NULLS LAST`,
        [ws.workspaceId],
      );
      expect(hours.filter((r: { dim: string }) => r.dim === 'model')).toEqual([
        { dim: 'model', bucket: BASE, value: 'm1', event_count: 2, usd_micros: 12 },
        { dim: 'model', bucket: BASE, value: null, event_count: 1, usd_micros: 11 },
      ]);
      // Every dimension of the hourly level holds the three events once.
      expect(Object.fromEntries(Object.keys(DIMS).map((d) => [d, hours.filter((r: { dim: string }) => r.dim === d).reduce((n: number, r: { event_count: number }) => n + r.event_count, 0)]))).toEqual({
        kind: 3, key: 3, model: 3, provider: 3, tool: 3,
      });
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
      await freezeWorkspace(t, owner.workspaceId, true);
      try {
        const res = await summary(viewer, window).expect(200);
        expect(res.body.totals.event_count).toBe(2);
      } finally {
        await freezeWorkspace(t, owner.workspaceId, false);
      }
    });
  });

  // Last: maintenance drops the partitions of BASE's month for every workspace of this suite.
  describe('retention', () => {
    const count = async (table: string, ws: string) =>
      (await t.db.query(`SELECT count(*)::int AS n FROM ${table} WHERE workspace_id = $1`, [ws]))[0].n as number;

    it('deletes old rollups of both levels in steps of at most the limit, and nothing newer', async () => {
      const ws = await t.signIn();
      await ingest(...[0, 1, 2].map((h) => usageEvent(ws.workspaceId, { occurred_at: at(h * 60 + 1), model: `m${h}` })));
      // Hourly: one row per dimension and hour; per minute: one per combination and minute.
      expect([await count('usage_rollups', ws.workspaceId), await count('usage_minute_rollups', ws.workspaceId)]).toEqual([15, 3]);
      const cutoff = new Date(at(120));
      const step = () => t.db.transaction((m) => t.app.get(UsageProjector).retain(m, ws.workspaceId, cutoff, 4));
      // 10 hourly and 2 minute rows older than the cutoff, 4 at a time across both levels, then none.
      expect([await step(), await step(), await step(), await step()]).toEqual([4, 4, 4, 0]);
      expect([await count('usage_rollups', ws.workspaceId), await count('usage_minute_rollups', ws.workspaceId)]).toEqual([5, 1]);
      expect((await summary(ws, { from: at(0), to: at(180) }).expect(200)).body.totals.event_count).toBe(1);
    });

    it('maintenance retains the minute rollups with the hourly ones, keeping the months inside retention', async () => {
      const ws = await t.signIn();
      const now = new Date().toISOString();
      await ingest(usageEvent(ws.workspaceId, { occurred_at: at(5) }), usageEvent(ws.workspaceId, { occurred_at: now }));
      const later = monthStart(BASE, t.config.readModelRetentionMonths + 1);
      expect((await t.app.get(StreamsService).maintain(later))!.failed).toEqual([]);
      expect([await count('usage_rollups', ws.workspaceId), await count('usage_minute_rollups', ws.workspaceId)]).toEqual([5, 1]);
      const [{ n }] = await t.db.query(`SELECT count(*)::int AS n FROM usage_minute_rollups WHERE bucket < $1`, [monthStart(later, -t.config.readModelRetentionMonths)]);
      expect(n).toBe(0);
      const res = await summary(ws, { from: new Date(Date.parse(now) - HOUR).toISOString(), to: new Date(Date.parse(now) + 1).toISOString() }).expect(200);
      expect(res.body.totals.event_count).toBe(1);
    });
  });
});
