import { Column, Entity, PrimaryColumn } from 'typeorm';
import { ReceiptStateColumns } from 'src/modules/receipts/entities/receipt-state.columns';

/** `receipt_heads`: The newest revision of each invocation: what the receipts list reads. */
@Entity({ name: 'receipt_heads' })
export class ReceiptHead extends ReceiptStateColumns {
  @PrimaryColumn({ name: 'invocation_id', type: 'text' })
  invocationId: string;

  @Column({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @Column({ name: 'receipt_id', type: 'text', collation: 'C' })
  receiptId: string;

  @Column({ name: 'receipt_revision', type: 'integer' })
  receiptRevision: number;

  @Column({ name: 'occurred_at', type: 'timestamptz', precision: 3 })
  occurredAt: Date;
}
