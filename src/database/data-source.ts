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
    // A null or undefined in a find's where is dropped by default, widening the find to any row (a run
    // with `session_profile_id: null` was given any active profile): fail instead.
    invalidWhereValuesBehavior: { null: 'throw', undefined: 'throw' },
    extra: { max: poolSize, idleTimeoutMillis: 30000 },
  };
}
