import { Column, Entity, PrimaryColumn } from 'typeorm';
import { ReceiptStateColumns } from 'src/modules/receipts/entities/receipt-state.columns';

/** `receipt_revisions`: One revision of a receipt, as projected from the gateway stream (partitioned by month of `occurred_at`). */
@Entity({ name: 'receipt_revisions' })
export class ReceiptRevision extends ReceiptStateColumns {
  @PrimaryColumn({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @PrimaryColumn({ name: 'invocation_id', type: 'text' })
  invocationId: string;

  @PrimaryColumn({ name: 'receipt_revision', type: 'integer' })
  receiptRevision: number;

  @Column({ name: 'receipt_id', type: 'text' })
  receiptId: string;

  @PrimaryColumn({ name: 'occurred_at', type: 'timestamptz', precision: 3 })
  occurredAt: Date;

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
