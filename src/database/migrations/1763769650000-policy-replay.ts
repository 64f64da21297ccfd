import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Policy replay reads the recorded authorization requests where they already are: the receipt
 * revisions' `envelope.authorization` (CONTRACT.md 4.4). A partial index over the revisions that
 * carry one lets a replay walk a workspace's newest decisions without touching the others; a
 * partitioned index, so every month's partition gets its own (created on attach).
 */
export class PolicyReplay1763769650000 implements MigrationInterface {
  name = 'PolicyReplay1763769650000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX receipt_revisions_authorization_idx ON receipt_revisions (workspace_id, occurred_at DESC) WHERE envelope ? 'authorization'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX receipt_revisions_authorization_idx`);
  }
}
