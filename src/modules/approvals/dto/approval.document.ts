import { formatTime, formatTimeRequired } from 'src/common/time/time';
import { ApprovalState, effectiveDecision, Reviewer, voteBlock } from 'src/modules/approvals/approval-state';

export interface ApprovalRow extends ApprovalState {
  id: string;
  workspace_id: string;
  request_id: string;
  key_id: string;
  invocation_id: string | null;
  tool: string;
  invocation_tool: string;
  connection_id: string;
  env: string;
  safe_summary: Record<string, number>;
  reason: string;
  revision: number;
  quorum_required: number;
  created_at: Date;
  decided_at: Date | null;
  executed_at: Date | null;
  receipt_id: string | null;
  error_code: string | null;
  digest: string | null;
}

export interface VoteRow {
  approval_id: string;
  user_id: string;
  decision: 'approve' | 'deny';
  reason: string;
  created_at: Date;
}

export const APPROVAL_COLUMNS = `id, workspace_id, request_id, key_id, invocation_id, tool, invocation_tool, connection_id, env, safe_summary, reason,
  status, decision_reason, execution_status, revision, policy_set_hash, matched_rules, quorum_required, created_at, expires_at,
  decided_at, executed_at, receipt_id, error_code, digest`;

/**
 * The approval document at `now` against the current policy-set hash. With a `reviewer` it carries
 * the caller's `can_vote`, `vote_block_reason` and `current_user_vote`; the gateway's view omits them.
 */
export function toApprovalDocument(row: ApprovalRow, votes: VoteRow[], currentHash: string, now: Date, reviewer?: Reviewer) {
  const effective = effectiveDecision(row, currentHash, now);
  const doc: Record<string, unknown> = {
    schema_version: 1,
    approval_id: row.id,
    workspace_id: row.workspace_id,
    key_id: row.key_id,
    request_id: row.request_id,
    invocation_id: row.invocation_id,
    tool: row.tool,
    invocation_tool: row.invocation_tool,
    connection_id: row.connection_id,
    env: row.env,
    safe_summary: row.safe_summary,
    reason: row.reason,
    decision_status: effective.status,
    decision_reason: effective.reason,
    execution_status: row.execution_status,
    revision: row.revision,
    created_at: formatTimeRequired(row.created_at),
    expires_at: formatTimeRequired(row.expires_at),
    decided_at: formatTime(row.decided_at),
    executed_at: formatTime(row.executed_at),
    policy_snapshot: { policy_set_hash: row.policy_set_hash, rules: row.matched_rules },
    votes: votes.map((v) => ({ user_id: v.user_id, decision: v.decision, reason: v.reason, created_at: formatTimeRequired(v.created_at) })),
    result: { receipt_id: row.receipt_id, error_code: row.error_code, digest: row.digest },
    quorum_required: row.quorum_required,
    approvals_received: votes.filter((v) => v.decision === 'approve').length,
  };
  if (reviewer) {
    const block = voteBlock(row, currentHash, now, reviewer, votes.map((v) => v.user_id));
    const own = votes.find((v) => v.user_id === reviewer.userId);
    doc.can_vote = block === null;
    doc.vote_block_reason = block;
    doc.current_user_vote = own ? { decision: own.decision, reason: own.reason, created_at: formatTimeRequired(own.created_at) } : null;
  }
  return doc;
}
