import { DataSource } from 'typeorm';
import { WorkerPlansRepository } from 'src/modules/workers/reference/worker-plans.repository';
import { openRepositoryDatabase, RepositoryDatabase } from 'test/support/repository-database';

describe('WorkerPlansRepository', () => {
  let db: RepositoryDatabase;
  let ds: DataSource;
  let repo: WorkerPlansRepository;

  async function workspace(id: string): Promise<string> {
    await ds.query(`INSERT INTO organizations (id) VALUES ($1)`, [`org_${id}`]);
    await ds.query(`INSERT INTO workspaces (id, org_id, slug, env) VALUES ($1, $2, $1, 'dev')`, [id, `org_${id}`]);
    return id;
  }

  beforeAll(async () => {
    db = await openRepositoryDatabase();
    ds = db.dataSource;
    repo = new WorkerPlansRepository(ds);
  });
  afterAll(() => db.close());

  it('reads no plan for a workspace without a row, the row when there is one', async () => {
    const ws = await workspace('ws_plan');
    expect(await repo.find(ws)).toBeNull();
    await ds.query(`INSERT INTO worker_plans (workspace_id, plan, card_on_file) VALUES ($1, 'pro', true)`, [ws]);
    expect(await repo.find(ws)).toMatchObject({ workspaceId: ws, plan: 'pro', cardOnFile: true, updatedAt: expect.any(Date) });
    expect(await ds.transaction((m) => repo.find(ws, m))).toMatchObject({ plan: 'pro' });
  });

  it('probes the database', async () => {
    expect(await repo.reachable()).toBe(true);
  });
});
