import { DataSourceOptions } from 'typeorm';
import type { AppConfig } from 'src/config/config';
import { boundedPg, DatabaseBounds, READ_MARGIN_MS } from 'src/database/bounded-driver';
import { MIGRATIONS } from 'src/database/migrations';

/**
 * The one TypeORM configuration (`entities`: src/entities.ts, for whoever reads and writes through them): the schema comes from the migrations, never from synchronize.
 * With `bounds` (the application's pool), nothing waits on the server longer than they allow
 * (src/database/bounded-driver.ts); the migration runner and the benchmarks' own pools go without.
 */
export function dataSourceOptions(url: string, poolSize: number, { entities = [], bounds }: { entities?: DataSourceOptions['entities']; bounds?: DatabaseBounds } = {}): DataSourceOptions {
  return {
    type: 'postgres',
    url,
    synchronize: false,
    migrationsRun: false,
    migrations: MIGRATIONS,
    migrationsTableName: 'typeorm_migrations',
    entities,
    // Off: a failed statement would be logged with its parameters, which can hold digests and envelopes.
    logging: false,
    // A null or undefined in a find's where is dropped by default, widening the find to any row (a run
    // with `session_profile_id: null` was given any active profile): fail instead.
    invalidWhereValuesBehavior: { null: 'throw', undefined: 'throw' },
    driver: boundedPg,
    extra: {
      max: poolSize,
      idleTimeoutMillis: 30000,
      keepAlive: true,
      readBoundMs: bounds ? bounds.statementTimeoutMs + READ_MARGIN_MS : 0,
      ...(bounds
        ? {
            // pg-pool's one bound covers both: a new connection's handshake, and waiting for a pooled one.
            connectionTimeoutMillis: bounds.connectTimeoutMs,
            statement_timeout: bounds.statementTimeoutMs,
          }
        : {}),
    },
  };
}

/** The application's bounds, from its configuration. */
export const databaseBounds = (config: AppConfig): DatabaseBounds => ({ connectTimeoutMs: config.databaseConnectTimeoutMs, statementTimeoutMs: config.databaseStatementTimeoutMs });
