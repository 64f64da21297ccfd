import { NotificationMessagesRepository } from 'src/modules/notifications/notification-messages.repository';
import { BudgetQuery, UsageEventsRepository } from 'src/modules/usage/usage-events.repository';
import { ReadModelPartitionsRepository } from 'src/modules/streams/read-model-partitions.repository';
import { UsageEvent } from 'src/modules/usage/usage-vocabulary';
import { openRepositoryDatabase, RepositoryDatabase } from 'test/support/repository-database';

const at = (day: number, h = 0) => new Date(Date.UTC(2031, 4, day, h));
const MONTH = { from: at(1), to: new Date(Date.UTC(2031, 5, 1)) };
const FROM = '2031-05-01T00:00:00.000000Z';
const BUDGET: BudgetQuery = { month: MONTH.from, thresholds: [50, 80, 100], dedupeMonth: FROM };
let seq = 0;
const spend = (workspaceId: string, keyId: string, usd: number, occurred_at: Date): UsageEvent => ({
  event_id: `evt_${++seq}`, workspace_id: workspaceId, kind: 'llm', key_id: keyId, model: 'm', provider: 'p', tool: null, pricing_known: true,
  outcome: 'ok', usd_micros: String(usd), tokens_in: '1', tokens_out: '1', tokens_cached: '0', tokens_reasoning: '0', occurred_at,
});

/** The projection's statement with a budget: keys' capped-key fragment, the keys' months it just wrote, notifications' written-message fragment. */
describe('UsageEventsRepository.projectEvents with a budget', () => {
  let db: RepositoryDatabase;
  const repo = new UsageEventsRepository();
  const key = (id: string, workspaceId: string, budget: number | null) =>
    db.dataSource.query(
      `INSERT INTO virtual_keys (id, workspace_id, env, agent_id, prefix, key_hash, last4, allowed_models, allowed_tools, tools_mode, scopes, attributes, budget_micros_usd_month)
       VALUES ($1, $2, 'dev', $3, 'ob_test', md5($1) || md5($1 || 'x'), 'abcd', '["*"]', '["*"]', 'full', '["llm"]', '{}', $4)`,
      [id, workspaceId, `agent_${id}`, budget],
    );
  /** Projects `events` (by default, a spend of 0 by each pair on the 25th) and answers the crossings. */
  const crossings = (pairs: [string, string][], events = pairs.map(([w, k]) => spend(w, k, 0, at(25)))) =>
    db.dataSource.transaction((m) => repo.projectEvents(m, events, BUDGET));

  beforeAll(async () => {
    db = await openRepositoryDatabase();
    await db.dataSource.query(`INSERT INTO organizations (id) VALUES ('org_1')`);
    await db.dataSource.query(`INSERT INTO workspaces (id, org_id, slug, env) VALUES ('ws_a', 'org_1', 'a', 'dev'), ('ws_b', 'org_1', 'b', 'dev')`);
    await key('key_capped', 'ws_a', 1000);
    await key('key_uncapped', 'ws_a', null);
    await key('key_zero', 'ws_a', 0);
    await key('key_other', 'ws_b', 100);
    const partitions = new ReadModelPartitionsRepository(db.dataSource);
    await partitions.ensure('usage_events', new Date(Date.UTC(2031, 3, 30)));
    await partitions.ensure('usage_events', at(1));
    await partitions.ensure('usage_events', at(30));
    await db.dataSource.transaction((m) =>
      repo.projectEvents(m, [
        spend('ws_a', 'key_capped', 500, at(3)),
        spend('ws_a', 'key_capped', 300, at(20, 5)),
        spend('ws_a', 'key_uncapped', 10_000, at(3)),
        spend('ws_a', 'key_zero', 10_000, at(3)),
        // The same key id in another workspace is another key.
        spend('ws_b', 'key_capped', 10_000, at(3)),
        spend('ws_b', 'key_other', 49, at(4)),
      ]),
    );
  });
  afterAll(() => db.close());

  it('answers each threshold a capped key of the batch reached over the month, in order, and no uncapped, zero or missing key', async () => {
    const rows = await crossings([['ws_a', 'key_capped'], ['ws_a', 'key_uncapped'], ['ws_a', 'key_zero'], ['ws_a', 'key_missing'], ['ws_b', 'key_other']]);
    expect(rows).toEqual([
      { workspace_id: 'ws_a', key_id: 'key_capped', agent_id: 'agent_key_capped', cap: '1000', spent: '800', threshold: 50, dedupe_key: `budget:key_capped:50:${FROM}` },
      { workspace_id: 'ws_a', key_id: 'key_capped', agent_id: 'agent_key_capped', cap: '1000', spent: '800', threshold: 80, dedupe_key: `budget:key_capped:80:${FROM}` },
    ]);
  });

  it("counts the batch's own spend, and only the keys of the batch in the month asked about", async () => {
    expect(await crossings([], [spend('ws_b', 'key_other', 1, at(26))])).toEqual([
      { workspace_id: 'ws_b', key_id: 'key_other', agent_id: 'agent_key_other', cap: '100', spent: '50', threshold: 50, dedupe_key: `budget:key_other:50:${FROM}` },
    ]);
    // Spend of the month before, and a batch without the key, answer nothing for it.
    expect(await crossings([], [spend('ws_a', 'key_capped', 1000, new Date(Date.UTC(2031, 3, 30)))])).toEqual([]);
    expect(await crossings([['ws_a', 'key_uncapped']])).toEqual([]);
  });

  it('leaves out a threshold whose message is written, in that workspace only', async () => {
    await db.dataSource.query(
      `INSERT INTO notification_messages (id, workspace_id, type, body, dedupe_key, dedupe_until, created_at)
       VALUES ('msg_1', 'ws_a', 'budget.threshold_crossed', '{}', $1, $3, now()), ('msg_2', 'ws_b', 'budget.threshold_crossed', '{}', $2, $3, now())`,
      [`budget:key_capped:50:${FROM}`, `budget:key_capped:80:${FROM}`, MONTH.to],
    );
    expect((await crossings([['ws_a', 'key_capped']])).map((r) => r.threshold)).toEqual([80]);
  });

  it('still leaves out a crossing of the 1st on the 31st, after retention (30 days) purged what it could', async () => {
    const messages = new NotificationMessagesRepository(db.dataSource);
    const dedupe = { key: `budget:key_capped:80:${FROM}`, until: MONTH.to };
    await messages.emit(db.dataSource.manager, { id: 'msg_80', workspaceId: 'ws_a', type: 'budget.threshold_crossed', body: '{}', dedupe, createdAt: at(1, 1) });
    const now = at(31, 2);
    await messages.purge(new Date(now.getTime() - 30 * 86_400_000), now);
    expect(await crossings([['ws_a', 'key_capped']])).toEqual([]);
  });

  it('answers nothing for no events, and nothing below the first threshold', async () => {
    expect(await db.dataSource.transaction((m) => repo.projectEvents(m, [], BUDGET))).toEqual([]);
    expect(await crossings([['ws_b', 'key_uncapped']])).toEqual([]);
  });
});
