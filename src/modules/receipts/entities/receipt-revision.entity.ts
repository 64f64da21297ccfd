import { Column, Entity, PrimaryColumn } from 'typeorm';

/** `receipt_revisions`: One revision of a receipt, as projected from the gateway stream (partitioned by month of `occurred_at`). */
@Entity({ name: 'receipt_revisions' })
export class ReceiptRevision {
  @PrimaryColumn({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @PrimaryColumn({ name: 'invocation_id', type: 'text' })
  invocationId: string;

  @PrimaryColumn({ name: 'receipt_revision', type: 'integer' })
  receiptRevision: number;

  @Column({ name: 'receipt_id', type: 'text' })
  receiptId: string;

  @Column({ name: 'tool', type: 'text', nullable: true })
  tool: string | null;

  @Column({ name: 'key_id', type: 'text', nullable: true })
  keyId: string | null;

  @Column({ name: 'connection_id', type: 'text', nullable: true })
  connectionId: string | null;

  @Column({ name: 'state', type: 'text' })
  state: string;

  @Column({ name: 'decision', type: 'text' })
  decision: string;

  @Column({ name: 'dispatch_state', type: 'text' })
  dispatchState: string;

  @Column({ name: 'evidence_trust', type: 'text' })
  evidenceTrust: string;

  @Column({ name: 'verification_state', type: 'text' })
  verificationState: string;

  @Column({ name: 'verification_method', type: 'text' })
  verificationMethod: string;

  @Column({ name: 'effect_claim', type: 'text', nullable: true })
  effectClaim: string | null;

  @Column({ name: 'verification_evidence_trust', type: 'text', nullable: true })
  verificationEvidenceTrust: string | null;

  @Column({ name: 'vendor_http_status', type: 'integer', nullable: true })
  vendorHttpStatus: number | null;

  @Column({ name: 'upstream_id', type: 'text', nullable: true })
  upstreamId: string | null;

  @Column({ name: 'latency_ms', type: 'integer', nullable: true })
  latencyMs: number | null;

  @Column({ name: 'usd_micros', type: 'bigint', nullable: true })
  usdMicros: string | null;

  @Column({ name: 'attempt_count', type: 'integer' })
  attemptCount: number;

  @PrimaryColumn({ name: 'occurred_at', type: 'timestamptz', precision: 3 })
  occurredAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', precision: 3 })
  updatedAt: Date;

  @Column({ name: 'idempotency_key', type: 'text', nullable: true })
  idempotencyKey: string | null;

  @Column({ name: 'request_id', type: 'text', nullable: true })
  requestId: string | null;

  @Column({ name: 'policy_id', type: 'text', nullable: true })
  policyId: string | null;

  @Column({ name: 'policy_revision_id', type: 'text', nullable: true })
  policyRevisionId: string | null;

  @Column({ name: 'envelope', type: 'jsonb', nullable: true })
  envelope: Record<string, unknown> | null;
}
