import { KeyBudgetsRepository } from 'src/modules/keys/key-budgets.repository';
import { openRepositoryDatabase, RepositoryDatabase } from 'test/support/repository-database';

describe('KeyBudgetsRepository', () => {
  let db: RepositoryDatabase;
  const repo = new KeyBudgetsRepository();
  const key = (id: string, workspaceId: string, budget: number | null) =>
    db.dataSource.query(
      `INSERT INTO virtual_keys (id, workspace_id, agent_id, prefix, key_hash, last4, allowed_models, allowed_tools, tools_mode, scopes, attributes, budget_micros_usd_month)
       VALUES ($1, $2, $3, 'ob_test', repeat('a', 63) || $4, 'abcd', '["*"]', '["*"]', 'full', '["llm"]', '{}', $5)`,
      [id, workspaceId, `agent_${id}`, String(id.length % 10), budget],
    );

  beforeAll(async () => {
    db = await openRepositoryDatabase();
    await db.dataSource.query(`INSERT INTO organizations (id) VALUES ('org_1')`);
    await db.dataSource.query(`INSERT INTO workspaces (id, org_id, slug, env) VALUES ('ws_a', 'org_1', 'a', 'dev'), ('ws_b', 'org_1', 'b', 'dev')`);
    await key('key_capped', 'ws_a', 1_000_000);
    await key('key_uncapped', 'ws_a', null);
    await key('key_zero', 'ws_a', 0);
    await key('key_other', 'ws_b', 5);
  });
  afterAll(() => db.close());

  it('answers the capped keys among the pairs, each only in its own workspace', async () => {
    const pairs: [string, string][] = [['ws_a', 'key_capped'], ['ws_a', 'key_uncapped'], ['ws_a', 'key_zero'], ['ws_a', 'key_other'], ['ws_b', 'key_other'], ['ws_a', 'key_missing']];
    const capped = await db.dataSource.transaction((m) => repo.capped(m, pairs));
    expect(capped.sort((a, b) => (a.key_id < b.key_id ? -1 : 1))).toEqual([
      { workspace_id: 'ws_a', key_id: 'key_capped', agent_id: 'agent_key_capped', cap: '1000000' },
      { workspace_id: 'ws_b', key_id: 'key_other', agent_id: 'agent_key_other', cap: '5' },
    ]);
  });

  it('reads nothing for no pairs, and nothing when no key of them is capped', async () => {
    expect(await repo.capped(db.dataSource.manager, [])).toEqual([]);
    expect(await repo.capped(db.dataSource.manager, [['ws_a', 'key_uncapped']])).toEqual([]);
  });
});
