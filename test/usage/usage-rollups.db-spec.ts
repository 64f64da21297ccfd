import { ReadModelPartitionsRepository } from 'src/modules/streams/read-model-partitions.repository';
import { UsageEventsRepository } from 'src/modules/usage/usage-events.repository';
import { UsageRollupsRepository } from 'src/modules/usage/usage-rollups.repository';
import { splitWindow } from 'src/modules/usage/usage.service';
import { UsageEvent } from 'src/modules/usage/usage-vocabulary';
import { ceilTo, HOUR_MS, MINUTE_MS } from 'src/common/time/time';
import { openRepositoryDatabase, RepositoryDatabase } from 'test/support/repository-database';

const hour = (h: number, m = 0, s = 0) => new Date(Date.UTC(2031, 4, 10, h, m, s));
let seq = 0;
const event = (workspaceId: string, occurred_at: Date, overrides: Partial<UsageEvent> = {}): UsageEvent => ({
  event_id: `evt_${++seq}`, workspace_id: workspaceId, kind: 'llm', key_id: 'key_1', model: 'm', provider: 'p', tool: null, pricing_known: true,
  outcome: 'ok', usd_micros: '100', tokens_in: '10', tokens_out: '20', tokens_cached: '0', tokens_reasoning: '0', occurred_at, ...overrides,
});

describe('UsageRollupsRepository', () => {
  let db: RepositoryDatabase;
  let repo: UsageRollupsRepository;
  const range = (from: Date, to: Date) => ({ window: { from, to }, ...splitWindow({ from, to }), minuteEnd: ceilTo(to, MINUTE_MS), hourEnd: ceilTo(to, HOUR_MS) });

  beforeAll(async () => {
    db = await openRepositoryDatabase();
    repo = new UsageRollupsRepository(db.dataSource);
    await new ReadModelPartitionsRepository(db.dataSource).ensure('usage_events', hour(0));
    const events = [
      event('ws_a', hour(1, 0, 10)),
      event('ws_a', hour(1, 30, 0), { model: 'n', key_id: 'key_2', usd_micros: '50' }),
      event('ws_a', hour(2, 59, 59), { model: null, key_id: null }),
      event('ws_b', hour(1, 0, 10), { key_id: 'key_1', usd_micros: '900' }),
    ];
    await db.dataSource.transaction((m) => new UsageEventsRepository().projectEvents(m, events));
  });
  afterAll(() => db.close());

  it('sums a window over hours, minutes and raw edges, by value (C order, null last), with the total last', async () => {
    const rows = await repo.summary('ws_a', 'model', range(hour(0, 59, 59), hour(3)));
    expect(rows.map((r) => [r.is_total, r.value, r.event_count, r.usd_micros])).toEqual([
      [0, 'm', '1', '100'],
      [0, 'n', '1', '50'],
      [0, null, '1', '100'],
      [1, null, '3', '250'],
    ]);
    // A window cutting an hour in the middle reads its edge minutes and seconds exactly.
    const edge = await repo.summary('ws_a', 'kind', range(hour(1, 0, 5), hour(1, 30, 0)));
    expect(edge.map((r) => [r.is_total, r.value, r.event_count])).toEqual([[0, 'llm', '1'], [1, null, '1']]);
    expect(await repo.summary('ws_none', 'kind', range(hour(0), hour(3)))).toEqual([expect.objectContaining({ is_total: 1, event_count: null })]);
  });

  it('tells whether a gap overlaps the window', async () => {
    await db.dataSource.transaction((m) => new UsageEventsRepository().insertGaps(m, [{ workspace_id: 'ws_a', from: hour(5), to: hour(6) }]));
    expect(await repo.gapInWindow('ws_a', { from: hour(4), to: hour(5, 0, 1) })).toBe(true);
    expect(await repo.gapInWindow('ws_a', { from: hour(6), to: hour(7) })).toBe(false);
    expect(await repo.gapInWindow('ws_b', { from: hour(4), to: hour(7) })).toBe(false);
  });

  it('reads the month spend of the keys asked for', async () => {
    const month = new Date(Date.UTC(hour(0).getUTCFullYear(), hour(0).getUTCMonth(), 1));
    expect(await repo.keySpend('ws_a', ['key_1', 'key_2', 'key_3'], month)).toEqual(
      expect.arrayContaining([{ key_id: 'key_1', spent: '100' }, { key_id: 'key_2', spent: '50' }]),
    );
    expect(await repo.keySpend('ws_a', ['key_3'], month)).toEqual([]);
    expect(await repo.keySpend('ws_a', ['key_1'], new Date(Date.UTC(hour(0).getUTCFullYear(), hour(0).getUTCMonth() + 1, 1)))).toEqual([]);
  });
});
