import { formatTime, formatTimeRequired } from 'src/common/time/time';

export interface WorkerRow {
  id: string;
  workspace_id: string;
  env: string;
  slug: string;
  display_name: string;
  description: string | null;
  agent_passport_id: string;
  lifecycle: string;
  draft_revision_id: string | null;
  published_revision_id: string | null;
  latest_revision_number: number;
  template_id: string | null;
  created_by_user_id: string;
  created_by_display_name: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface RevisionRow {
  id: string;
  workspace_id: string;
  worker_id: string;
  revision_number: number;
  state: string;
  body: Record<string, unknown>;
  permission_preset: string;
  policy_revision_id: string;
  execution_mode: string;
  limits: Record<string, unknown>;
  allowed_capabilities: string[];
  ui_actions: string[];
  revision_digest: string | null;
  created_at: Date;
  published_at: Date | null;
}

export function toWorkerDocument(row: WorkerRow) {
  return {
    schema_version: 1,
    worker_id: row.id,
    workspace_id: row.workspace_id,
    env: row.env,
    slug: row.slug,
    display_name: row.display_name,
    description: row.description,
    agent_passport_id: row.agent_passport_id,
    lifecycle: row.lifecycle,
    draft_revision_id: row.draft_revision_id,
    published_revision_id: row.published_revision_id,
    latest_revision_number: row.latest_revision_number,
    template_id: row.template_id,
    created_by: { kind: 'operator', id: row.created_by_user_id, display_name: row.created_by_display_name },
    created_at: formatTimeRequired(row.created_at),
    updated_at: formatTimeRequired(row.updated_at),
  };
}

export function toRevisionDocument(row: RevisionRow) {
  return {
    schema_version: 1,
    revision_id: row.id,
    worker_id: row.worker_id,
    workspace_id: row.workspace_id,
    revision_number: row.revision_number,
    state: row.state,
    revision_digest: row.revision_digest,
    ...row.body,
    permission_preset: { preset: row.permission_preset, policy_revision_id: row.policy_revision_id },
    execution_mode: row.execution_mode,
    limits: row.limits,
    allowed_capabilities: row.allowed_capabilities,
    ui_actions: row.ui_actions,
    created_at: formatTimeRequired(row.created_at),
    published_at: formatTime(row.published_at),
  };
}

/** The six digest parts of a stored revision. */
export const digestPartsOf = (row: RevisionRow) => ({
  allowed_capabilities: row.allowed_capabilities,
  body: row.body,
  execution_mode: row.execution_mode,
  limits: row.limits,
  permission_preset: row.permission_preset,
  ui_actions: row.ui_actions,
});
