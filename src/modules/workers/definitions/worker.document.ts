import { formatTime, formatTimeRequired } from 'src/common/time/time';
import { WorkerRevision } from 'src/modules/workers/entities/worker-revision.entity';
import { Worker } from 'src/modules/workers/entities/worker.entity';

export function toWorkerDocument(row: Worker) {
  return {
    schema_version: 1,
    worker_id: row.id,
    workspace_id: row.workspaceId,
    env: row.env,
    slug: row.slug,
    display_name: row.displayName,
    description: row.description,
    agent_passport_id: row.agentPassportId,
    lifecycle: row.lifecycle,
    draft_revision_id: row.draftRevisionId,
    published_revision_id: row.publishedRevisionId,
    latest_revision_number: row.latestRevisionNumber,
    template_id: row.templateId,
    created_by: { kind: 'operator', id: row.createdByUserId, display_name: row.createdByDisplayName },
    created_at: formatTimeRequired(row.createdAt),
    updated_at: formatTimeRequired(row.updatedAt),
  };
}

export function toRevisionDocument(row: WorkerRevision) {
  return {
    schema_version: 1,
    revision_id: row.id,
    worker_id: row.workerId,
    workspace_id: row.workspaceId,
    revision_number: row.revisionNumber,
    state: row.state,
    revision_digest: row.revisionDigest,
    ...row.body,
    permission_preset: { preset: row.permissionPreset, policy_revision_id: row.policyRevisionId },
    execution_mode: row.executionMode,
    limits: row.limits,
    allowed_capabilities: row.allowedCapabilities,
    ui_actions: row.uiActions,
    created_at: formatTimeRequired(row.createdAt),
    published_at: formatTime(row.publishedAt),
  };
}

/** The six digest parts of a stored revision. */
export const digestPartsOf = (row: WorkerRevision) => ({
  allowed_capabilities: row.allowedCapabilities,
  body: row.body,
  execution_mode: row.executionMode,
  limits: row.limits,
  permission_preset: row.permissionPreset,
  ui_actions: row.uiActions,
});

/** The environment classes a revision body asks for. */
export const classesOf = (body: Record<string, unknown>): string[] =>
  ((body.environment_requests as { environment_class: string }[] | undefined) ?? []).map((r) => r.environment_class);
