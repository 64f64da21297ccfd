import { DataSourceOptions } from 'typeorm';
import { MIGRATIONS } from 'src/database/migrations';

/** The one TypeORM configuration: migrations only, never synchronize. */
export function dataSourceOptions(url: string, poolSize: number): DataSourceOptions {
  return {
    type: 'postgres',
    url,
    synchronize: false,
    migrationsRun: false,
    migrations: MIGRATIONS,
    migrationsTableName: 'typeorm_migrations',
    entities: [],
    logging: ['error'],
    extra: { max: poolSize, idleTimeoutMillis: 30000 },
  };
}
