import { Column, Entity, PrimaryColumn } from 'typeorm';
import { UsageTotals } from 'src/modules/usage/entities/usage-totals.columns';

/**
 * One hourly rollup of `usage_rollups`: a workspace, a dimension and its value (null where the event
 * had none). The table has no primary key: its identity is the `UNIQUE NULLS NOT DISTINCT (workspace_id,
 * dim, bucket, value)` constraint, declared here as the entity's primary columns.
 */
@Entity({ name: 'usage_rollups' })
export class UsageRollup extends UsageTotals {
  @PrimaryColumn({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @PrimaryColumn({ name: 'dim', type: 'text' })
  dim: string;

  @PrimaryColumn({ name: 'bucket', type: 'timestamptz' })
  bucket: Date;

  @Column({ name: 'value', type: 'text', nullable: true, primary: true })
  value: string | null;
}
