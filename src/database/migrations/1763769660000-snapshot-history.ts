import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Snapshot history and rollout (issue 18): one row per staged version with the audit action that
 * staged it, completed with the signed document's header once it is built (digest, signature,
 * size, publish time); the documents' sections stored once per distinct content; and what each
 * gateway instance last reported applying.
 */
export class SnapshotHistory1763769660000 implements MigrationInterface {
  name = 'SnapshotHistory1763769660000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE snapshot_contents (
        workspace_id text NOT NULL REFERENCES workspaces(id),
        content_hash text NOT NULL,
        body text NOT NULL,
        PRIMARY KEY (workspace_id, content_hash)
      );
      CREATE TABLE snapshot_versions (
        workspace_id text NOT NULL REFERENCES workspaces(id),
        version integer NOT NULL,
        cause text,
        staged_at timestamptz(3) NOT NULL DEFAULT now(),
        env text,
        generated_at timestamptz(3),
        content_hash text,
        digest text,
        kid text,
        signature text,
        size integer,
        published_at timestamptz(3),
        converged_at timestamptz(3),
        PRIMARY KEY (workspace_id, version),
        FOREIGN KEY (workspace_id, content_hash) REFERENCES snapshot_contents (workspace_id, content_hash),
        CHECK ((digest IS NULL) = (content_hash IS NULL))
      );
      CREATE INDEX snapshot_versions_content_idx ON snapshot_versions (workspace_id, content_hash);
      CREATE TABLE snapshot_instances (
        workspace_id text NOT NULL REFERENCES workspaces(id),
        instance_id text NOT NULL,
        version integer NOT NULL,
        digest text NOT NULL,
        applied_at timestamptz(3) NOT NULL,
        reported_at timestamptz(3) NOT NULL,
        PRIMARY KEY (workspace_id, instance_id)
      );
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE snapshot_instances; DROP TABLE snapshot_versions; DROP TABLE snapshot_contents;`);
  }
}
