import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { Env } from 'src/platform/access/context';
import type { ExecutionStatus } from 'src/modules/approvals/approval-state';
import type { SetRule } from 'src/modules/approvals/rules';

/** `approvals`: An approval of a held tool call. */
@Entity({ name: 'approvals' })
export class Approval {
  @PrimaryColumn({ name: 'id', type: 'text' })
  id: string;

  @Column({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @Column({ name: 'request_id', type: 'text' })
  requestId: string;

  @Column({ name: 'key_id', type: 'text' })
  keyId: string;

  @Column({ name: 'invocation_id', type: 'text', nullable: true })
  invocationId: string | null;

  @Column({ name: 'tool', type: 'text' })
  tool: string;

  @Column({ name: 'invocation_tool', type: 'text' })
  invocationTool: string;

  @Column({ name: 'connection_id', type: 'text' })
  connectionId: string;

  @Column({ name: 'env', type: 'text' })
  env: Env;

  @Column({ name: 'safe_summary', type: 'jsonb' })
  safeSummary: Record<string, number>;

  @Column({ name: 'reason', type: 'text' })
  reason: string;

  @Column({ name: 'status', type: 'text' })
  status: string;

  @Column({ name: 'decision_reason', type: 'text' })
  decisionReason: string;

  @Column({ name: 'execution_status', type: 'text' })
  executionStatus: ExecutionStatus;

  @Column({ name: 'revision', type: 'integer' })
  revision: number;

  @Column({ name: 'policy_set_hash', type: 'text' })
  policySetHash: string;

  @Column({ name: 'matched_rules', type: 'jsonb' })
  matchedRules: SetRule[];

  @Column({ name: 'quorum_required', type: 'integer' })
  quorumRequired: number;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @Column({ name: 'expires_at', type: 'timestamptz', precision: 3 })
  expiresAt: Date;

  @Column({ name: 'decided_at', type: 'timestamptz', precision: 3, nullable: true })
  decidedAt: Date | null;

  @Column({ name: 'executed_at', type: 'timestamptz', precision: 3, nullable: true })
  executedAt: Date | null;

  @Column({ name: 'receipt_id', type: 'text', nullable: true })
  receiptId: string | null;

  @Column({ name: 'error_code', type: 'text', nullable: true })
  errorCode: string | null;

  @Column({ name: 'digest', type: 'text', nullable: true })
  digest: string | null;
}
