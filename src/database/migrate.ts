import { DataSource } from 'typeorm';
import { dataSourceOptions } from 'src/database/data-source';

/** Held while migrating, so replicas starting together apply each migration exactly once. */
const MIGRATION_LOCK = 7_262_614;

/**
 * Applies pending migrations with a short-lived single connection (so the session-level advisory
 * lock and the migrations share it); returns the names applied.
 */
export async function runMigrations(url: string): Promise<string[]> {
  const dataSource = new DataSource(dataSourceOptions(url, 1));
  await dataSource.initialize();
  try {
    await dataSource.query(`SELECT pg_advisory_lock($1)`, [MIGRATION_LOCK]);
    try {
      const applied = await dataSource.runMigrations({ transaction: 'each' });
      return applied.map((m) => m.name);
    } finally {
      await dataSource.query(`SELECT pg_advisory_unlock($1)`, [MIGRATION_LOCK]);
    }
  } finally {
    await dataSource.destroy();
  }
}
