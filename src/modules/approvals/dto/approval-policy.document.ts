import { formatTimeRequired } from 'src/common/time/time';
import { ApprovalRule } from 'src/modules/approvals/rules';

export interface ApprovalPolicyRow {
  id: string;
  workspace_id: string;
  name: string;
  status: 'active' | 'disabled';
  revision: number;
  revision_id: string;
  rules: ApprovalRule[];
  created_at: Date;
  updated_at: Date;
}

export const APPROVAL_POLICY_COLUMNS = `id, workspace_id, name, status, revision, revision_id, rules, created_at, updated_at`;

export function toApprovalPolicyDocument(row: ApprovalPolicyRow) {
  return {
    schema_version: 1,
    policy_id: row.id,
    workspace_id: row.workspace_id,
    name: row.name,
    status: row.status,
    revision: row.revision,
    revision_id: row.revision_id,
    rules: row.rules,
    created_at: formatTimeRequired(row.created_at),
    updated_at: formatTimeRequired(row.updated_at),
  };
}
