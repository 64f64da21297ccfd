import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Key rotation, removals with a guarantee, and last use (issue 22).
 *
 * - `virtual_keys` keeps the secret it replaced during a rotation's grace: its digest, last4 and
 *   the instant it stops being valid (`previous_*`), and when the key was last rotated.
 * - `virtual_key_removals`: digests that must be absent from the hot path from `due_at` on (a
 *   rotation's old digest at the end of its grace, an older one displaced at once). The key-sync
 *   job deletes them from Redis and then the row, so a missed expiry or a failed delete converges.
 * - `virtual_key_usage`: the latest `occurred_at` of a usage event per key, written by the usage
 *   projection in its batch (a table of its own, so the projection never takes the key row's lock).
 */
export class KeyRotation1763769630000 implements MigrationInterface {
  name = 'KeyRotation1763769630000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE virtual_keys
        ADD COLUMN previous_key_hash text CHECK (previous_key_hash ~ '^[0-9a-f]{64}$'),
        ADD COLUMN previous_last4 text,
        ADD COLUMN previous_valid_until timestamptz(3),
        ADD COLUMN rotated_at timestamptz(3);
      CREATE UNIQUE INDEX virtual_keys_previous_key_hash_key ON virtual_keys (previous_key_hash) WHERE previous_key_hash IS NOT NULL;

      CREATE TABLE virtual_key_removals (
        key_hash text PRIMARY KEY CHECK (key_hash ~ '^[0-9a-f]{64}$'),
        key_id text NOT NULL REFERENCES virtual_keys(id),
        workspace_id text NOT NULL,
        due_at timestamptz(3) NOT NULL
      );
      CREATE INDEX virtual_key_removals_due_idx ON virtual_key_removals (due_at, key_id);
      CREATE INDEX virtual_key_removals_key_idx ON virtual_key_removals (key_id);

      CREATE TABLE virtual_key_usage (
        key_id text PRIMARY KEY REFERENCES virtual_keys(id),
        workspace_id text NOT NULL,
        last_used_at timestamptz(3) NOT NULL
      );
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      DROP TABLE virtual_key_usage;
      DROP TABLE virtual_key_removals;
      DROP INDEX virtual_keys_previous_key_hash_key;
      ALTER TABLE virtual_keys DROP COLUMN previous_key_hash, DROP COLUMN previous_last4, DROP COLUMN previous_valid_until, DROP COLUMN rotated_at;
    `);
  }
}
