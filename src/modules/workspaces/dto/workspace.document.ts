import { WorkspaceRow } from 'src/platform/tenancy/workspaces.repository';
import { formatTimeRequired } from 'src/common/time/time';

export function toWorkspaceDocument(row: WorkspaceRow) {
  return { id: row.id, org_id: row.org_id, slug: row.slug, env: row.env, frozen: row.frozen, snapshot_version: row.snapshot_version };
}

export interface MemberRow {
  user_id: string;
  email: string | null;
  role: string;
  created_at: Date;
}

export function toMemberDocument(row: MemberRow) {
  return { user_id: row.user_id, email: row.email, role: row.role, created_at: formatTimeRequired(row.created_at) };
}
