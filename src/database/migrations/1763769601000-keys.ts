import { MigrationInterface, QueryRunner } from 'typeorm';

/** Virtual keys: only the sha256 digest and last4 of the secret are stored. */
export class Keys1763769601000 implements MigrationInterface {
  name = 'Keys1763769601000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE virtual_keys (
        id text PRIMARY KEY,
        workspace_id text NOT NULL REFERENCES workspaces(id),
        agent_id text NOT NULL,
        prefix text NOT NULL CHECK (prefix IN ('ob_live', 'ob_test')),
        key_hash text NOT NULL CHECK (key_hash ~ '^[0-9a-f]{64}$'),
        last4 text NOT NULL,
        allowed_models jsonb NOT NULL,
        allowed_tools jsonb NOT NULL,
        tools_mode text NOT NULL CHECK (tools_mode IN ('full', 'progressive')),
        budget_micros_usd_month bigint,
        rpm bigint CHECK (rpm >= 0),
        tpm bigint CHECK (tpm >= 0),
        scopes jsonb NOT NULL,
        attributes jsonb NOT NULL,
        expires_at timestamptz(3),
        revoked_at timestamptz(3),
        hot_path_pending boolean NOT NULL DEFAULT true,
        created_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        CONSTRAINT virtual_keys_key_hash_key UNIQUE (key_hash)
      );
      CREATE INDEX virtual_keys_list_idx ON virtual_keys (workspace_id, created_at, id);
      CREATE INDEX virtual_keys_agent_idx ON virtual_keys (workspace_id, agent_id) WHERE revoked_at IS NULL;
      CREATE INDEX virtual_keys_hot_path_pending_idx ON virtual_keys (id) WHERE hot_path_pending;
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE virtual_keys`);
  }
}
