import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { EvidenceResult } from 'src/modules/webhooks/dto/evidence.document';

/** `webhook_evidence`: An immutable webhook evidence event and control's correlation of it to a receipt. */
@Entity({ name: 'webhook_evidence' })
export class WebhookEvidence {
  @PrimaryColumn({ name: 'evidence_id', type: 'text' })
  evidenceId: string;

  @Column({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @Column({ name: 'connection_id', type: 'text' })
  connectionId: string;

  @Column({ name: 'subscription_id', type: 'text' })
  subscriptionId: string;

  @Column({ name: 'event_type', type: 'text' })
  eventType: string;

  @Column({ name: 'provider_event_id', type: 'text' })
  providerEventId: string;

  @Column({ name: 'upstream_id', type: 'text', nullable: true })
  upstreamId: string | null;

  @Column({ name: 'idempotency_key', type: 'text', nullable: true })
  idempotencyKey: string | null;

  @Column({ name: 'trust', type: 'text' })
  trust: 'vendor_signed' | 'broker_attested';

  @Column({ name: 'signature_profile', type: 'text' })
  signatureProfile: string;

  @Column({ name: 'key_version', type: 'integer' })
  keyVersion: number;

  @Column({ name: 'body_digest', type: 'text' })
  bodyDigest: string;

  @Column({ name: 'batch_position', type: 'integer', nullable: true })
  batchPosition: number | null;

  @Column({ name: 'results', type: 'jsonb' })
  results: EvidenceResult[];

  @Column({ name: 'received_at', type: 'timestamptz', precision: 3 })
  receivedAt: Date;

  @Column({ name: 'content_digest', type: 'text' })
  contentDigest: string;

  @Column({ name: 'correlation', type: 'text' })
  correlation: 'matched' | 'unmatched' | 'ambiguous';

  @Column({ name: 'receipt_id', type: 'text', nullable: true })
  receiptId: string | null;

  @Column({ name: 'stage', type: 'text', nullable: true })
  stage: string | null;

  @Column({ name: 'evaluation_pending', type: 'boolean' })
  evaluationPending: boolean;

  @Column({ name: 'evaluate_after', type: 'timestamptz', precision: 3 })
  evaluateAfter: Date;

  @Column({ name: 'recorded_at', type: 'timestamptz', precision: 3 })
  recordedAt: Date;
}
