import { Client } from 'pg';
import { runMigrations } from 'src/database/migrate';
import { MIGRATIONS } from 'src/database/migrations';
import { createSuiteDatabase } from 'test/support/database';

describe('migrations', () => {
  it('apply every migration exactly once when several replicas start together', async () => {
    const db = await createSuiteDatabase();
    try {
      const results = await Promise.all([runMigrations(db.url), runMigrations(db.url), runMigrations(db.url)]);
      expect(results.map((r) => r.length).sort()).toEqual([0, 0, MIGRATIONS.length]);
      const client = new Client({ connectionString: db.url });
      await client.connect();
      try {
        const { rows } = await client.query(`SELECT count(*)::int AS n FROM typeorm_migrations`);
        expect(rows[0].n).toBe(MIGRATIONS.length);
      } finally {
        await client.end();
      }
      expect(await runMigrations(db.url)).toEqual([]);
    } finally {
      await db.drop();
    }
  });
});
