import * as pg from 'pg';
import { DataSource, EntityManager, QueryFailedError } from 'typeorm';
import { BoundedPool } from 'src/database/bounded-driver';

export interface NamedStatement {
  name: string;
  text: string;
}

/** CTEs another module's write adds to a host statement, and the columns they add to its answer (`emittedWith`). */
export interface CarriedCtes {
  ctes: string;
  columns: string;
}

/**
 * Runs a named statement on the pool behind TypeORM: PostgreSQL parses and plans it once per
 * connection instead of on every call. For hot reads outside a transaction only (a read whose
 * connection was lost runs once more on a fresh one: src/database/bounded-driver.ts).
 */
export async function namedQuery<T>(dataSource: DataSource, statement: NamedStatement, values: unknown[]): Promise<T[]> {
  const pool = (dataSource.driver as unknown as { master: BoundedPool }).master;
  const result = await pool.run<T>({ name: statement.name, text: statement.text }, values);
  return result.rows;
}

/**
 * A named statement through `manager`: on the connection of the caller's transaction (the manager
 * of a `Tx`), else on the pool. For a statement on a measured hot path that runs in transactions
 * (the outbox's emit, the usage projection), where planning it anew each time costs more than
 * running it; never retried. A failure on the transaction's connection is TypeORM's
 * `QueryFailedError`, as `manager.query`'s is (callers classify its `driverError`).
 */
export async function namedQueryIn<T>(manager: EntityManager, statement: NamedStatement, values: unknown[]): Promise<T[]> {
  const client = (manager.queryRunner as { databaseConnection?: pg.Client } | undefined)?.databaseConnection;
  if (!client) return namedQuery<T>(manager.connection, statement, values);
  try {
    const result = await client.query<T & pg.QueryResultRow>({ name: statement.name, text: statement.text, values });
    return result.rows;
  } catch (error) {
    throw new QueryFailedError(statement.text, values, error as Error);
  }
}
