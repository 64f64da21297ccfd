import { DataSource } from 'typeorm';
import { dataSourceOptions } from 'src/database/data-source';

/** Applies pending migrations with a short-lived connection; returns the names applied. */
export async function runMigrations(url: string): Promise<string[]> {
  const dataSource = new DataSource(dataSourceOptions(url, 1));
  await dataSource.initialize();
  try {
    const applied = await dataSource.runMigrations({ transaction: 'each' });
    return applied.map((m) => m.name);
  } finally {
    await dataSource.destroy();
  }
}
