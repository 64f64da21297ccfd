import { Role, roleGrants } from 'src/platform/access/actions';
import { ApiError } from 'src/common/http/errors';
import { isEligible, SetRule } from 'src/modules/approvals/rules';

export type StoredStatus = 'pending' | 'approved' | 'denied';
export type DecisionReason = 'awaiting_quorum' | 'quorum_met' | 'default_deny' | 'reviewer_deny' | 'expired' | 'policy_changed' | 'execution_failed';
export type ExecutionStatus = 'not_requested' | 'pending' | 'succeeded' | 'failed';

/** What the effective status needs of a stored approval. */
export interface ApprovalState {
  status: StoredStatus;
  decision_reason: DecisionReason;
  execution_status: ExecutionStatus;
  policy_set_hash: string;
  matched_rules: SetRule[];
  expires_at: Date;
}

/** Stored `pending`, or `approved` and not executed yet: the approvals that expiry and policy changes act on. */
export const isOpen = (a: Pick<ApprovalState, 'status' | 'execution_status'>) => a.status === 'pending' || (a.status === 'approved' && a.execution_status === 'pending');

/**
 * The status read at request time: an open approval past `expires_at` reads `expired` (expiry wins),
 * else one raised under another policy set reads `invalidated`; everything else is as stored.
 */
export function effectiveDecision(a: ApprovalState, currentHash: string, now: Date): { status: StoredStatus | 'expired' | 'invalidated'; reason: DecisionReason } {
  if (isOpen(a) && a.expires_at.getTime() <= now.getTime()) return { status: 'expired', reason: 'expired' };
  if (isOpen(a) && a.policy_set_hash !== currentHash) return { status: 'invalidated', reason: 'policy_changed' };
  return { status: a.status, reason: a.decision_reason };
}

export type VoteBlock = 'not_pending' | 'expired' | 'frozen' | 'role' | 'policy_changed' | 'not_eligible' | 'already_voted';

export interface Reviewer {
  userId: string;
  role: Role;
  frozen: boolean;
}

/** Why `reviewer` cannot vote now, in the order the vote route checks it; null when they can. */
export function voteBlock(a: ApprovalState, currentHash: string, now: Date, reviewer: Reviewer, voters: string[]): VoteBlock | null {
  if (!roleGrants(reviewer.role, 'approval.decide')) return 'role';
  if (reviewer.frozen) return 'frozen';
  const effective = effectiveDecision(a, currentHash, now).status;
  if (effective === 'expired') return 'expired';
  if (effective === 'invalidated') return 'policy_changed';
  if (effective !== 'pending') return 'not_pending';
  if (!isEligible(a.matched_rules, reviewer.userId, reviewer.role)) return 'not_eligible';
  if (voters.includes(reviewer.userId)) return 'already_voted';
  return null;
}

/** The vote route's answer for a block found under the row lock (role and frozen are the guard's). */
export function voteError(block: VoteBlock): ApiError {
  switch (block) {
    case 'role':
      return new ApiError(403, 'action not permitted');
    case 'frozen':
      return new ApiError(409, 'workspace is frozen');
    case 'expired':
      return new ApiError(409, 'approval has expired');
    case 'policy_changed':
      return new ApiError(409, 'approval policy changed');
    case 'not_pending':
      return new ApiError(409, 'approval is not pending');
    case 'not_eligible':
      return new ApiError(403, 'operator is not an eligible approver');
    case 'already_voted':
      return new ApiError(409, 'operator already voted');
  }
}
