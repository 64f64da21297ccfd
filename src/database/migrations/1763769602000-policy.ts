import { MigrationInterface, QueryRunner } from 'typeorm';

/** The workspace's policy draft (one row per workspace once stored) and its immutable published revisions. */
export class Policy1763769602000 implements MigrationInterface {
  name = 'Policy1763769602000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE policies (
        workspace_id text PRIMARY KEY REFERENCES workspaces(id),
        id text NOT NULL UNIQUE,
        cedar_text text NOT NULL,
        draft_hash text NOT NULL,
        draft_updated_at timestamptz(3) NOT NULL,
        current_revision_id text,
        created_at timestamptz(3) NOT NULL DEFAULT clock_timestamp()
      );
      CREATE TABLE policy_revisions (
        id text PRIMARY KEY,
        workspace_id text NOT NULL REFERENCES policies(workspace_id),
        policy_id text NOT NULL REFERENCES policies(id),
        cedar_text text NOT NULL,
        draft_hash text NOT NULL,
        bundle_hash text NOT NULL,
        entities jsonb NOT NULL,
        published_by text REFERENCES users(id),
        published_at timestamptz(3) NOT NULL DEFAULT clock_timestamp()
      );
      CREATE INDEX policy_revisions_draft_idx ON policy_revisions (workspace_id, draft_hash);
      ALTER TABLE policies ADD CONSTRAINT policies_current_revision_fk FOREIGN KEY (current_revision_id) REFERENCES policy_revisions(id);
      CREATE FUNCTION policy_revisions_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'policy revisions are immutable'; END
      $$;
      CREATE TRIGGER policy_revisions_immutable BEFORE UPDATE OR DELETE ON policy_revisions
        FOR EACH ROW EXECUTE FUNCTION policy_revisions_immutable();
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE policies DROP CONSTRAINT policies_current_revision_fk;
      DROP TABLE policy_revisions;
      DROP FUNCTION policy_revisions_immutable();
      DROP TABLE policies;
    `);
  }
}
