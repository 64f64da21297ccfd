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
    // Off: a failed statement would be logged with its parameters, which can hold digests and envelopes.
    logging: false,
    extra: { max: poolSize, idleTimeoutMillis: 30000 },
  };
}
