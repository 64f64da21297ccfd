import { ApprovalPolicyRevision } from 'src/modules/approvals/entities/approval-policy-revision.entity';
import { ApprovalPolicy } from 'src/modules/approvals/entities/approval-policy.entity';
import { ApprovalVote } from 'src/modules/approvals/entities/approval-vote.entity';
import { Approval } from 'src/modules/approvals/entities/approval.entity';

/** The tables approvals owns: its repositories may name these and no others (test/platform/ownership.spec.ts). */
export const APPROVALS_ENTITIES = [ApprovalPolicyRevision, ApprovalPolicy, ApprovalVote, Approval];
