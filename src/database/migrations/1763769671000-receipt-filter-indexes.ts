import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The receipts list filtered by `state` or `decision` (issue 23): with only the list index, the
 * newest-first page of a rare value walked the workspace's heads backwards discarding the others
 * (or, when the planner guessed the value common, sorted all of them), so its cost moved with the
 * workspace's row count. An index per filter, in list order after the filter, makes either filter
 * a keyset walk like the unfiltered page.
 */
export class ReceiptFilterIndexes1763769671000 implements MigrationInterface {
  name = 'ReceiptFilterIndexes1763769671000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE INDEX receipt_heads_state_idx ON receipt_heads (workspace_id, state, occurred_at, receipt_id);
      CREATE INDEX receipt_heads_decision_idx ON receipt_heads (workspace_id, decision, occurred_at, receipt_id);
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX receipt_heads_state_idx, receipt_heads_decision_idx`);
  }
}
