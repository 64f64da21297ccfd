import { DatabaseProbeRepository } from 'src/modules/health/database-probe.repository';
import { openRepositoryDatabase, RepositoryDatabase } from 'test/support/repository-database';

describe('DatabaseProbeRepository', () => {
  let db: RepositoryDatabase;
  let repo: DatabaseProbeRepository;

  beforeAll(async () => {
    db = await openRepositoryDatabase();
    repo = new DatabaseProbeRepository(db.dataSource);
  });
  afterAll(() => db.close());

  it('pings, and reports no pending migration on a migrated database', async () => {
    await expect(repo.ping()).resolves.toBeUndefined();
    expect(await repo.migrationsPending()).toBe(false);
  });
});
