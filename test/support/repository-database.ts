import { DataSource } from 'typeorm';
import { dataSourceOptions } from 'src/database/data-source';
import { runMigrations } from 'src/database/migrate';
import { ENTITIES } from 'src/entities';
import { createSuiteDatabase } from 'test/support/database';

export interface RepositoryDatabase {
  dataSource: DataSource;
  close(): Promise<void>;
}

/**
 * The repository tier (`*.db-spec.ts`): a fresh, migrated database on the real PostgreSQL and a data
 * source over every entity, for constructing repositories directly (`new KeysRepository(db.dataSource)`).
 */
export async function openRepositoryDatabase(): Promise<RepositoryDatabase> {
  const database = await createSuiteDatabase();
  await runMigrations(database.url);
  const dataSource = await new DataSource(dataSourceOptions(database.url, 4, { entities: ENTITIES })).initialize();
  return {
    dataSource,
    close: async () => {
      await dataSource.destroy();
      await database.drop();
    },
  };
}
