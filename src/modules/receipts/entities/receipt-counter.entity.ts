import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A row of `receipt_counters`. */
@Entity({ name: 'receipt_counters' })
export class ReceiptCounter {
  @PrimaryColumn({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @Column({ name: 'total', type: 'bigint' })
  total: string;

  @Column({ name: 'last_at', type: 'timestamptz', precision: 3, nullable: true })
  lastAt: Date | null;
}
