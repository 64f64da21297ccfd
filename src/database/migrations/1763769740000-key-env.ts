import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `virtual_keys.env`: the environment of the key's workspace, copied at mint. A workspace's `env` is
 * set when it is created and never changes (spec: no route updates it), so the copy cannot drift;
 * with it the gateway's key lookup and the key sync read `virtual_keys` alone instead of joining
 * `workspaces`, a table of another module (issue 31). Existing keys take their workspace's env.
 */
export class KeyEnv1763769740000 implements MigrationInterface {
  name = 'KeyEnv1763769740000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE virtual_keys ADD COLUMN env text`);
    await q.query(`UPDATE virtual_keys k SET env = w.env FROM workspaces w WHERE w.id = k.workspace_id`);
    await q.query(`ALTER TABLE virtual_keys ALTER COLUMN env SET NOT NULL, ADD CONSTRAINT virtual_keys_env_check CHECK (env IN ('dev', 'stage', 'prod'))`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE virtual_keys DROP COLUMN env`);
  }
}
