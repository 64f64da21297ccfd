import { Column } from 'typeorm';

/** The receipt's state columns that `receipt_revisions` and `receipt_heads` both hold (a head is a copy of its newest revision). */
export abstract class ReceiptStateColumns {
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

  @Column({ name: 'updated_at', type: 'timestamptz', precision: 3 })
  updatedAt: Date;
}
