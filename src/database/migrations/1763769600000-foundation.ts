import { MigrationInterface, QueryRunner } from 'typeorm';

/** Users, organizations, workspaces with their publication counters, memberships and audit. */
export class Foundation1763769600000 implements MigrationInterface {
  name = 'Foundation1763769600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE users (
        id text PRIMARY KEY,
        issuer text NOT NULL,
        subject text NOT NULL,
        email text,
        created_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        CONSTRAINT users_issuer_subject_key UNIQUE (issuer, subject)
      );
      CREATE TABLE organizations (
        id text PRIMARY KEY,
        created_at timestamptz(3) NOT NULL DEFAULT clock_timestamp()
      );
      CREATE TABLE organization_members (
        org_id text NOT NULL REFERENCES organizations(id),
        user_id text NOT NULL REFERENCES users(id),
        created_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        PRIMARY KEY (org_id, user_id)
      );
      CREATE INDEX organization_members_user_idx ON organization_members (user_id);
      CREATE TABLE workspaces (
        id text PRIMARY KEY,
        org_id text NOT NULL REFERENCES organizations(id),
        slug text NOT NULL,
        env text NOT NULL CHECK (env IN ('dev', 'stage', 'prod')),
        frozen boolean NOT NULL DEFAULT false,
        assistant_enabled boolean NOT NULL DEFAULT false,
        snapshot_version integer NOT NULL DEFAULT 0,
        published_version integer NOT NULL DEFAULT 0,
        created_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        CONSTRAINT workspaces_org_slug_key UNIQUE (org_id, slug)
      );
      CREATE INDEX workspaces_publication_pending_idx ON workspaces (id) WHERE published_version < snapshot_version;
      CREATE TABLE workspace_members (
        workspace_id text NOT NULL REFERENCES workspaces(id),
        user_id text NOT NULL REFERENCES users(id),
        role text NOT NULL CHECK (role IN ('viewer', 'developer', 'admin', 'owner')),
        created_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        PRIMARY KEY (workspace_id, user_id)
      );
      CREATE INDEX workspace_members_user_idx ON workspace_members (user_id);
      CREATE INDEX workspace_members_order_idx ON workspace_members (workspace_id, created_at, user_id);
      CREATE TABLE audit_events (
        id text PRIMARY KEY,
        workspace_id text NOT NULL REFERENCES workspaces(id),
        actor_user_id text,
        actor_email text,
        action text NOT NULL,
        target text,
        detail jsonb NOT NULL DEFAULT '{}'::jsonb,
        occurred_at timestamptz(3) NOT NULL DEFAULT clock_timestamp()
      );
      CREATE INDEX audit_events_page_idx ON audit_events (workspace_id, occurred_at DESC, id DESC);
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE audit_events, workspace_members, workspaces, organization_members, organizations, users`);
  }
}
