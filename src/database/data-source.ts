import { DataSourceOptions } from 'typeorm';
import { ENTITIES } from 'src/database/entities';
import { MIGRATIONS } from 'src/database/migrations';

/** The one TypeORM configuration: the schema comes from the migrations, never from synchronize. */
export function dataSourceOptions(url: string, poolSize: number): DataSourceOptions {
  return {
    type: 'postgres',
    url,
    synchronize: false,
    migrationsRun: false,
    migrations: MIGRATIONS,
    migrationsTableName: 'typeorm_migrations',
    entities: ENTITIES,
    // Off: a failed statement would be logged with its parameters, which can hold digests and envelopes.
    logging: false,
    extra: { max: poolSize, idleTimeoutMillis: 30000 },
  };
}
