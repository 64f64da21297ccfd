import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { Price } from 'src/modules/model-providers/dto/pricing.document';

/** `pricebooks`: The workspace pricebook, replaced as a whole. */
@Entity({ name: 'pricebooks' })
export class Pricebook {
  @PrimaryColumn({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @Column({ name: 'revision', type: 'integer' })
  revision: number;

  @Column({ name: 'prices', type: 'jsonb' })
  prices: Price[];

  @Column({ name: 'updated_by', type: 'text', nullable: true })
  updatedBy: string | null;

  @Column({ name: 'updated_at', type: 'timestamptz', precision: 3 })
  updatedAt: Date;
}
