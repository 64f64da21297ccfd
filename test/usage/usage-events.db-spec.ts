import { ReadModelPartitionsRepository } from 'src/modules/streams/read-model-partitions.repository';
import { UsageEventsRepository } from 'src/modules/usage/usage-events.repository';
import { UsageEvent } from 'src/modules/usage/usage-vocabulary';
import { openRepositoryDatabase, RepositoryDatabase } from 'test/support/repository-database';

const AT = new Date('2031-05-10T10:00:30.000Z');
let seq = 0;
const event = (workspaceId: string, overrides: Partial<UsageEvent> = {}): UsageEvent => ({
  event_id: `evt_${++seq}`, workspace_id: workspaceId, kind: 'llm', key_id: 'key_1', model: 'm', provider: 'p', tool: null, pricing_known: true,
  outcome: 'ok', usd_micros: '100', tokens_in: '10', tokens_out: '20', tokens_cached: '0', tokens_reasoning: '0', occurred_at: AT, ...overrides,
});

describe('UsageEventsRepository', () => {
  let db: RepositoryDatabase;
  const repo = new UsageEventsRepository();
  const count = async (table: string, ws: string): Promise<number> => (await db.dataSource.query(`SELECT count(*)::int AS n FROM ${table} WHERE workspace_id = $1`, [ws]))[0].n;

  beforeAll(async () => {
    db = await openRepositoryDatabase();
    await new ReadModelPartitionsRepository(db.dataSource).ensure('usage_events', AT);
  });
  afterAll(() => db.close());

  it('writes nothing for an empty batch', async () => {
    await db.dataSource.transaction(async (m) => {
      await repo.projectEvents(m, []);
      await repo.insertGaps(m, []);
    });
    expect(await db.dataSource.query(`SELECT count(*)::int AS n FROM usage_events`)).toEqual([{ n: 0 }]);
  });

  it('projects events into both rollup levels, and a redelivered event adds nothing', async () => {
    const events = [event('ws_a'), event('ws_a', { kind: 'tool', tool: 't', model: null, pricing_known: false, usd_micros: '7' }), event('ws_b')];
    await db.dataSource.transaction((m) => repo.projectEvents(m, events));
    await db.dataSource.transaction((m) => repo.projectEvents(m, [events[0]]));
    expect(await count('usage_events', 'ws_a')).toBe(2);
    // Hourly: one row per dimension value; per minute: one per combination of the dimensions' values.
    const hourly = await db.dataSource.query(
      `SELECT dim, value, event_count::int, usd_micros::int, unpriced_count::int, tool_calls::int FROM usage_rollups WHERE workspace_id = 'ws_a' ORDER BY dim, value`,
    );
    expect(hourly).toEqual([
      { dim: 'key', value: 'key_1', event_count: 2, usd_micros: 100, unpriced_count: 1, tool_calls: 1 },
      { dim: 'kind', value: 'llm', event_count: 1, usd_micros: 100, unpriced_count: 0, tool_calls: 0 },
      { dim: 'kind', value: 'tool', event_count: 1, usd_micros: 0, unpriced_count: 1, tool_calls: 1 },
      { dim: 'model', value: 'm', event_count: 1, usd_micros: 100, unpriced_count: 0, tool_calls: 0 },
      { dim: 'model', value: null, event_count: 1, usd_micros: 0, unpriced_count: 1, tool_calls: 1 },
      { dim: 'provider', value: 'p', event_count: 2, usd_micros: 100, unpriced_count: 1, tool_calls: 1 },
      { dim: 'tool', value: 't', event_count: 1, usd_micros: 0, unpriced_count: 1, tool_calls: 1 },
      { dim: 'tool', value: null, event_count: 1, usd_micros: 100, unpriced_count: 0, tool_calls: 0 },
    ]);
    expect(await count('usage_minute_rollups', 'ws_a')).toBe(2);
    expect(await count('usage_rollups', 'ws_b')).toBe(5);
  });

  it("adds each key's known-priced spend to its UTC month, once per event, and keeps a month until all of it is older than the cutoff", async () => {
    const june = new Date('2031-06-01T00:00:00.000Z');
    await new ReadModelPartitionsRepository(db.dataSource).ensure('usage_events', june);
    const events = [
      event('ws_m'),
      event('ws_m', { usd_micros: '40', occurred_at: new Date('2031-05-31T23:59:59.999Z') }),
      event('ws_m', { pricing_known: false, usd_micros: '1000' }),
      event('ws_m', { key_id: 'key_2', usd_micros: '5', occurred_at: june }),
      event('ws_m', { key_id: null }),
    ];
    await db.dataSource.transaction((m) => repo.projectEvents(m, events.slice(0, 3)));
    await db.dataSource.transaction((m) => repo.projectEvents(m, events));
    const months = () => db.dataSource.query(`SELECT key_id, month, usd_micros::int FROM usage_key_months WHERE workspace_id = 'ws_m' ORDER BY key_id, month`);
    expect(await months()).toEqual([
      { key_id: 'key_1', month: new Date('2031-05-01T00:00:00.000Z'), usd_micros: 140 },
      { key_id: 'key_2', month: june, usd_micros: 5 },
    ]);
    // The month's key rollups hold the same spend.
    const [{ spent }] = await db.dataSource.query(`SELECT sum(usd_micros)::int AS spent FROM usage_rollups WHERE workspace_id = 'ws_m' AND dim = 'key' AND value = 'key_1'`);
    expect(spent).toBe(140);
    await db.dataSource.transaction((m) => repo.retain(m, 'ws_m', new Date('2031-06-30T00:00:00.000Z'), 1000));
    expect((await months()).map((r: { key_id: string }) => r.key_id)).toEqual(['key_2']);
    await db.dataSource.transaction((m) => repo.retain(m, 'ws_m', new Date('2031-07-01T00:00:00.000Z'), 1000));
    expect(await months()).toEqual([]);
  });

  it("sums a month's key months again from the hourly rollups, that month only, and holds projections off until it commits", async () => {
    const may = new Date('2031-05-01T00:00:00.000Z');
    const june = new Date('2031-06-01T00:00:00.000Z');
    await new ReadModelPartitionsRepository(db.dataSource).ensure('usage_events', june);
    await db.dataSource.transaction((m) =>
      repo.projectEvents(m, [event('ws_s'), event('ws_s', { key_id: 'key_2', usd_micros: '5' }), event('ws_s', { usd_micros: '7', occurred_at: june })]),
    );
    // As a replica of the code before usage_key_months would leave them: events in the rollups only, and a stray row.
    await db.dataSource.query(`UPDATE usage_key_months SET usd_micros = 1 WHERE workspace_id = 'ws_s' AND key_id = 'key_1' AND month = $1`, [may]);
    await db.dataSource.query(`DELETE FROM usage_key_months WHERE workspace_id = 'ws_s' AND key_id = 'key_2'`);
    await db.dataSource.query(`INSERT INTO usage_key_months (workspace_id, key_id, month, usd_micros) VALUES ('ws_s', 'key_9', $1, 999)`, [may]);
    const months = () => db.dataSource.query(`SELECT key_id, month, usd_micros::int FROM usage_key_months WHERE workspace_id = 'ws_s' ORDER BY key_id, month`);
    const mayKeys = async () =>
      (await db.dataSource.query(`SELECT count(DISTINCT (workspace_id, value))::int AS n FROM usage_rollups WHERE dim = 'key' AND value IS NOT NULL AND bucket >= $1 AND bucket < $2`, [may, june]))[0].n;

    const runner = db.dataSource.createQueryRunner();
    await runner.startTransaction();
    const written = await repo.resumKeyMonth(runner.manager, may, june);
    expect(written).toBe(await mayKeys());
    // A projection of the same month waits for the sum to commit (even for a key without a month row
    // yet, which no row lock would hold back), then adds its spend once.
    let projected = false;
    const projection = db.dataSource.transaction((m) => repo.projectEvents(m, [event('ws_s', { key_id: 'key_3', usd_micros: '1000' })])).then(() => (projected = true));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(projected).toBe(false);
    await runner.commitTransaction();
    await runner.release();
    await projection;
    expect(await months()).toEqual([
      { key_id: 'key_1', month: may, usd_micros: 100 },
      { key_id: 'key_1', month: june, usd_micros: 7 },
      { key_id: 'key_2', month: may, usd_micros: 5 },
      { key_id: 'key_3', month: may, usd_micros: 1000 },
    ]);
  });

  it('records gaps once each', async () => {
    const gap = { workspace_id: 'ws_g', from: new Date('2031-05-10T10:00:00Z'), to: new Date('2031-05-10T11:00:00Z') };
    await db.dataSource.transaction((m) => repo.insertGaps(m, [gap, gap]));
    await db.dataSource.transaction((m) => repo.insertGaps(m, [gap]));
    expect(await count('usage_gaps', 'ws_g')).toBe(1);
  });

  it('retains at most `limit` rollup rows of both levels before the cutoff, and the gaps that ended before it', async () => {
    const hours = [0, 1, 2].map((h) => new Date(Date.UTC(2031, 4, 10, h, 0, 1)));
    await db.dataSource.transaction((m) => repo.projectEvents(m, hours.map((at, i) => event('ws_r', { occurred_at: at, model: `m${i}` }))));
    await db.dataSource.transaction((m) => repo.insertGaps(m, [{ workspace_id: 'ws_r', from: hours[0], to: hours[1] }, { workspace_id: 'ws_r', from: hours[1], to: hours[2] }]));
    expect([await count('usage_rollups', 'ws_r'), await count('usage_minute_rollups', 'ws_r')]).toEqual([15, 3]);
    const retain = () => db.dataSource.transaction((m) => repo.retain(m, 'ws_r', new Date(Date.UTC(2031, 4, 10, 2)), 4));
    // 10 hourly and 2 minute rows older than the cutoff, 4 at a time across both levels, then none.
    expect([await retain(), await retain(), await retain(), await retain()]).toEqual([4, 4, 4, 0]);
    expect([await count('usage_rollups', 'ws_r'), await count('usage_minute_rollups', 'ws_r')]).toEqual([5, 1]);
    expect(await db.dataSource.query(`SELECT to_at FROM usage_gaps WHERE workspace_id = 'ws_r'`)).toEqual([{ to_at: hours[2] }]);
  });
});
