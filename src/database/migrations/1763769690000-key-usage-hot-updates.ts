import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `virtual_key_usage` on half-full pages: every usage batch moves its keys' `last_used_at`
 * forward, an update of no indexed column, which is HOT (no new index entry) only with room left
 * on the page, as for the usage rollups (migration 1763769609000). A migration of its own because
 * the table's migration (1763769630000) had already run on databases when this was measured.
 */
export class KeyUsageHotUpdates1763769690000 implements MigrationInterface {
  name = 'KeyUsageHotUpdates1763769690000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE virtual_key_usage SET (fillfactor = 50)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE virtual_key_usage RESET (fillfactor)`);
  }
}
