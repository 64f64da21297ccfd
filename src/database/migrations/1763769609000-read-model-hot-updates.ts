import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Every ingestion batch updates the current hour's usage rollups and the receipt counters of its
 * workspaces, and changes no indexed column of either: with room left on each page those updates
 * are HOT (the new version on the same page, no new index entry). Packed full, nearly every one
 * moved its row to another page and added an entry to the key index (measured: 2% HOT updates at
 * the default fillfactor, all of them at 50).
 */
export class ReadModelHotUpdates1763769609000 implements MigrationInterface {
  name = 'ReadModelHotUpdates1763769609000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE usage_rollups SET (fillfactor = 50); ALTER TABLE receipt_counters SET (fillfactor = 50)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE usage_rollups RESET (fillfactor); ALTER TABLE receipt_counters RESET (fillfactor)`);
  }
}
