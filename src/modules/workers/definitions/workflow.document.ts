import { canonicalJson, sha256Tagged } from 'src/common/crypto/crypto';
import { formatTime, formatTimeRequired } from 'src/common/time/time';
import { WorkflowRevision } from 'src/modules/workers/entities/workflow-revision.entity';
import { Workflow } from 'src/modules/workers/entities/workflow.entity';

export const toWorkflowDocument = (row: Workflow) => ({
  schema_version: 1,
  workflow_id: row.id,
  workspace_id: row.workspaceId,
  slug: row.slug,
  display_name: row.displayName,
  description: row.description,
  lifecycle: row.lifecycle,
  draft_revision_id: row.draftRevisionId,
  published_revision_id: row.publishedRevisionId,
  latest_revision_number: row.latestRevisionNumber,
  created_by: { kind: 'operator', id: row.createdByUserId, display_name: row.createdByDisplayName },
  created_at: formatTimeRequired(row.createdAt),
  updated_at: formatTimeRequired(row.updatedAt),
});

export const toWorkflowRevisionDocument = (row: WorkflowRevision) => ({
  schema_version: 1,
  revision_id: row.id,
  workflow_id: row.workflowId,
  workspace_id: row.workspaceId,
  revision_number: row.revisionNumber,
  state: row.state,
  revision_digest: row.revisionDigest,
  steps: row.steps,
  permitted_trigger_types: row.permittedTriggerTypes,
  created_at: formatTimeRequired(row.createdAt),
  published_at: formatTime(row.publishedAt),
});

/** `sha256:` over canonical JSON of the revision's `permitted_trigger_types` and `steps`. */
export const workflowDigest = (row: Pick<WorkflowRevision, 'steps' | 'permittedTriggerTypes'>) =>
  sha256Tagged(canonicalJson({ permitted_trigger_types: row.permittedTriggerTypes, steps: row.steps }));
