import { PricebooksRepository } from 'src/modules/model-providers/pricebooks.repository';
import { openRepositoryDatabase, RepositoryDatabase } from 'test/support/repository-database';
import { SeededWorkspace, seedWorkspace } from 'test/connections/db-seed';

describe('PricebooksRepository', () => {
  let db: RepositoryDatabase;
  let repo: PricebooksRepository;
  let ws: SeededWorkspace;

  beforeAll(async () => {
    db = await openRepositoryDatabase();
    repo = new PricebooksRepository(db.dataSource);
  });
  beforeEach(async () => {
    ws = await seedWorkspace(db.dataSource);
  });
  afterAll(() => db.close());

  const price = (model: string, input: number) => ({
    model,
    input_micros_usd_per_mtok: input,
    output_micros_usd_per_mtok: 2 * input,
    cached_micros_usd_per_mtok: 0,
    reasoning_micros_usd_per_mtok: 0,
  });

  it('reads nothing before the first replace', async () => {
    expect(await repo.find(ws.workspaceId)).toBeUndefined();
  });

  it('creates revision 1, then replaces as a whole under revision + 1, readable inside the transaction', async () => {
    const first = await db.dataSource.transaction((tx) => repo.replace(tx, ws.workspaceId, [price('gpt-*', 10), price('o1-*', 20)], ws.userId));
    expect(first).toMatchObject({ workspaceId: ws.workspaceId, revision: 1, prices: [price('gpt-*', 10), price('o1-*', 20)], updatedBy: ws.userId });
    const second = await db.dataSource.transaction(async (tx) => {
      const saved = await repo.replace(tx, ws.workspaceId, [price('claude-*', 5)], ws.userId);
      expect((await repo.find(ws.workspaceId, tx))?.revision).toBe(2);
      return saved;
    });
    expect(second).toMatchObject({ revision: 2, prices: [price('claude-*', 5)] });
    expect(second.updatedAt.getTime()).toBeGreaterThanOrEqual(first.updatedAt.getTime());
    expect(await repo.find(ws.workspaceId)).toEqual(second);
  });

  it('locks the row while replacing: a concurrent replace waits and then builds on the committed revision', async () => {
    await db.dataSource.transaction((tx) => repo.replace(tx, ws.workspaceId, [price('a', 1)], ws.userId));
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const first = db.dataSource.transaction(async (tx) => {
      await repo.replace(tx, ws.workspaceId, [price('b', 2)], ws.userId);
      await held;
    });
    await new Promise((r) => setTimeout(r, 100));
    const second = db.dataSource.transaction((tx) => repo.replace(tx, ws.workspaceId, [price('c', 3)], ws.userId));
    await new Promise((r) => setTimeout(r, 200));
    release();
    await first;
    expect((await second).revision).toBe(3);
  });
});
