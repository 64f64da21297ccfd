import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The receipts list filtered by `state` or `decision` (issue 23): with only the list index, the
 * newest-first page of a rare value walked the workspace's heads backwards discarding the others,
 * so its cost moved with the workspace's row count (a value with no receipt read them all). A
 * partial index per filter, in list order after the filter, holds the heads of every value but
 * the common one (`completed`, `allow`): a filter on a rare value walks its own entries like the
 * unfiltered page, a filter on the common value walks the list index and finds a match on nearly
 * every row, and the common head (most of every batch) adds no entry to either index.
 */
export class ReceiptFilterIndexes1763769681000 implements MigrationInterface {
  name = 'ReceiptFilterIndexes1763769681000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE INDEX receipt_heads_state_idx ON receipt_heads (workspace_id, state, occurred_at, receipt_id) WHERE state <> 'completed';
      CREATE INDEX receipt_heads_decision_idx ON receipt_heads (workspace_id, decision, occurred_at, receipt_id) WHERE decision <> 'allow';
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX receipt_heads_state_idx, receipt_heads_decision_idx`);
  }
}
