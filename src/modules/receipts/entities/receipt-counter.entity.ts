import { Column, Entity, PrimaryColumn } from 'typeorm';

/** `receipt_counters`: The per-workspace receipt count of the overview, kept at ingestion. */
@Entity({ name: 'receipt_counters' })
export class ReceiptCounter {
  @PrimaryColumn({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @Column({ name: 'total', type: 'bigint' })
  total: string;

  @Column({ name: 'last_at', type: 'timestamptz', precision: 3, nullable: true })
  lastAt: Date | null;
}
