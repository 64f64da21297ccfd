import { MigrationInterface, QueryRunner } from 'typeorm';

/** Workers: plans, definitions and revisions, workflows and revisions, runs, artifacts, session profiles. */
export class Workers1763769607000 implements MigrationInterface {
  name = 'Workers1763769607000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE worker_plans (
        workspace_id text PRIMARY KEY REFERENCES workspaces(id),
        plan text NOT NULL CHECK (plan IN ('free', 'builder', 'pro', 'team', 'enterprise')),
        card_on_file boolean NOT NULL DEFAULT false,
        updated_at timestamptz(3) NOT NULL DEFAULT clock_timestamp()
      );
      CREATE TABLE workers (
        id text PRIMARY KEY,
        workspace_id text NOT NULL REFERENCES workspaces(id),
        env text NOT NULL,
        slug text NOT NULL,
        display_name text NOT NULL,
        description text,
        agent_passport_id text NOT NULL,
        lifecycle text NOT NULL CHECK (lifecycle IN ('draft', 'published', 'retired')),
        draft_revision_id text,
        published_revision_id text,
        latest_revision_number integer NOT NULL,
        template_id text,
        created_by_user_id text NOT NULL,
        created_by_display_name text,
        created_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        updated_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        CONSTRAINT workers_workspace_slug_key UNIQUE (workspace_id, slug)
      );
      CREATE INDEX workers_page_idx ON workers (workspace_id, created_at, id);
      CREATE TABLE worker_revisions (
        id text PRIMARY KEY,
        workspace_id text NOT NULL REFERENCES workspaces(id),
        worker_id text NOT NULL REFERENCES workers(id),
        revision_number integer NOT NULL,
        state text NOT NULL CHECK (state IN ('draft', 'published', 'superseded')),
        body jsonb NOT NULL,
        permission_preset text NOT NULL,
        policy_revision_id text NOT NULL,
        execution_mode text NOT NULL,
        limits jsonb NOT NULL,
        allowed_capabilities jsonb NOT NULL,
        ui_actions jsonb NOT NULL,
        revision_digest text,
        created_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        published_at timestamptz(3),
        CONSTRAINT worker_revisions_number_key UNIQUE (worker_id, revision_number)
      );
      CREATE TABLE workflows (
        id text PRIMARY KEY,
        workspace_id text NOT NULL REFERENCES workspaces(id),
        slug text NOT NULL,
        display_name text NOT NULL,
        description text,
        lifecycle text NOT NULL CHECK (lifecycle IN ('draft', 'published', 'retired')),
        draft_revision_id text,
        published_revision_id text,
        latest_revision_number integer NOT NULL,
        created_by_user_id text NOT NULL,
        created_by_display_name text,
        created_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        updated_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        CONSTRAINT workflows_workspace_slug_key UNIQUE (workspace_id, slug)
      );
      CREATE INDEX workflows_page_idx ON workflows (workspace_id, created_at, id);
      CREATE TABLE workflow_revisions (
        id text PRIMARY KEY,
        workspace_id text NOT NULL REFERENCES workspaces(id),
        workflow_id text NOT NULL REFERENCES workflows(id),
        revision_number integer NOT NULL,
        state text NOT NULL CHECK (state IN ('draft', 'published', 'superseded')),
        steps jsonb NOT NULL,
        permitted_trigger_types jsonb NOT NULL,
        revision_digest text,
        created_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        published_at timestamptz(3),
        CONSTRAINT workflow_revisions_number_key UNIQUE (workflow_id, revision_number)
      );
      CREATE TABLE worker_session_profiles (
        id text PRIMARY KEY,
        workspace_id text NOT NULL REFERENCES workspaces(id),
        name text NOT NULL,
        environment_class text NOT NULL,
        description text,
        status text NOT NULL CHECK (status IN ('active', 'revoked')),
        created_by_user_id text NOT NULL,
        created_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        revoked_at timestamptz(3)
      );
      CREATE UNIQUE INDEX worker_session_profiles_active_name_key ON worker_session_profiles (workspace_id, name) WHERE status = 'active';
      CREATE INDEX worker_session_profiles_page_idx ON worker_session_profiles (workspace_id, created_at, id);
      CREATE TABLE worker_runs (
        id text PRIMARY KEY,
        workspace_id text NOT NULL REFERENCES workspaces(id),
        kind text NOT NULL CHECK (kind IN ('run', 'demo')),
        worker_id text REFERENCES workers(id),
        revision_id text,
        template_id text,
        status text NOT NULL CHECK (status IN ('starting', 'queued', 'running', 'paused', 'succeeded', 'failed', 'cancelled')),
        environment_classes text[] NOT NULL,
        session_profile_id text,
        input jsonb NOT NULL,
        failure jsonb,
        orchestrator_run_id text,
        control_lease_id text,
        control_lease_holder text,
        control_lease_expires_at timestamptz(3),
        created_by_user_id text NOT NULL,
        created_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        updated_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        ended_at timestamptz(3)
      );
      CREATE INDEX worker_runs_page_idx ON worker_runs (workspace_id, created_at DESC, id DESC);
      CREATE INDEX worker_runs_active_idx ON worker_runs (workspace_id) WHERE status IN ('starting', 'queued', 'running', 'paused');
      CREATE TABLE worker_run_artifacts (
        id text PRIMARY KEY,
        workspace_id text NOT NULL REFERENCES workspaces(id),
        run_id text NOT NULL REFERENCES worker_runs(id),
        name text NOT NULL,
        media_type text NOT NULL,
        size_bytes bigint NOT NULL,
        digest text NOT NULL,
        created_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        expires_at timestamptz(3) NOT NULL
      );
      CREATE INDEX worker_run_artifacts_run_idx ON worker_run_artifacts (workspace_id, run_id);
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(
      `DROP TABLE worker_run_artifacts, worker_runs, worker_session_profiles, workflow_revisions, workflows, worker_revisions, workers, worker_plans`,
    );
  }
}
