import { DataSource } from 'typeorm';

export interface NamedStatement {
  name: string;
  text: string;
}

/**
 * Runs a named statement on the pool behind TypeORM: PostgreSQL parses and plans it once per
 * connection instead of on every call. For hot reads outside a transaction only.
 */
export async function namedQuery<T>(dataSource: DataSource, statement: NamedStatement, values: unknown[]): Promise<T[]> {
  const pool = (dataSource.driver as unknown as { master: { query: (q: object) => Promise<{ rows: T[] }> } }).master;
  const result = await pool.query({ name: statement.name, text: statement.text, values });
  return result.rows;
}
