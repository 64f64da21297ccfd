import { formatTimeRequired } from 'src/common/time/time';
import { ApprovalPolicy } from 'src/modules/approvals/entities/approval-policy.entity';

export function toApprovalPolicyDocument(row: ApprovalPolicy) {
  return {
    schema_version: 1,
    policy_id: row.id,
    workspace_id: row.workspaceId,
    name: row.name,
    status: row.status,
    revision: row.revision,
    revision_id: row.revisionId,
    rules: row.rules,
    created_at: formatTimeRequired(row.createdAt),
    updated_at: formatTimeRequired(row.updatedAt),
  };
}
