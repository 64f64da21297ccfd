import { MigrationInterface, QueryRunner } from 'typeorm';

/** Approval policies with their revisions, approvals of held tool calls, and reviewers' votes. */
export class Approvals1763769603000 implements MigrationInterface {
  name = 'Approvals1763769603000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE approval_policies (
        id text PRIMARY KEY,
        workspace_id text NOT NULL REFERENCES workspaces(id),
        name text NOT NULL,
        status text NOT NULL CHECK (status IN ('active', 'disabled')),
        revision integer NOT NULL,
        revision_id text NOT NULL,
        rules jsonb NOT NULL,
        created_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        updated_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        CONSTRAINT approval_policies_workspace_name_key UNIQUE (workspace_id, name)
      );
      CREATE INDEX approval_policies_active_idx ON approval_policies (workspace_id) WHERE status = 'active';
      CREATE TABLE approval_policy_revisions (
        id text PRIMARY KEY,
        workspace_id text NOT NULL REFERENCES workspaces(id),
        policy_id text NOT NULL REFERENCES approval_policies(id),
        revision integer NOT NULL,
        name text NOT NULL,
        rules jsonb NOT NULL,
        created_by text REFERENCES users(id),
        created_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        CONSTRAINT approval_policy_revisions_policy_revision_key UNIQUE (policy_id, revision)
      );
      CREATE TABLE approvals (
        id text PRIMARY KEY,
        workspace_id text NOT NULL REFERENCES workspaces(id),
        request_id text NOT NULL,
        key_id text NOT NULL,
        invocation_id text,
        tool text NOT NULL,
        invocation_tool text NOT NULL,
        connection_id text NOT NULL,
        env text NOT NULL CHECK (env IN ('dev', 'stage', 'prod')),
        safe_summary jsonb NOT NULL,
        reason text NOT NULL,
        status text NOT NULL CHECK (status IN ('pending', 'approved', 'denied')),
        decision_reason text NOT NULL CHECK (decision_reason IN ('awaiting_quorum', 'quorum_met', 'default_deny', 'reviewer_deny', 'execution_failed')),
        execution_status text NOT NULL CHECK (execution_status IN ('not_requested', 'pending', 'succeeded', 'failed')),
        revision integer NOT NULL DEFAULT 1,
        policy_set_hash text NOT NULL,
        matched_rules jsonb NOT NULL,
        quorum_required integer NOT NULL,
        created_at timestamptz(3) NOT NULL,
        expires_at timestamptz(3) NOT NULL,
        decided_at timestamptz(3),
        executed_at timestamptz(3),
        receipt_id text,
        error_code text,
        digest text,
        CONSTRAINT approvals_workspace_request_key UNIQUE (workspace_id, request_id)
      );
      CREATE INDEX approvals_page_idx ON approvals (workspace_id, created_at DESC, id DESC);
      CREATE TABLE approval_votes (
        approval_id text NOT NULL REFERENCES approvals(id),
        workspace_id text NOT NULL REFERENCES workspaces(id),
        user_id text NOT NULL REFERENCES users(id),
        decision text NOT NULL CHECK (decision IN ('approve', 'deny')),
        reason text NOT NULL,
        created_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        PRIMARY KEY (approval_id, user_id)
      );
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE approval_votes, approvals, approval_policy_revisions, approval_policies`);
  }
}
