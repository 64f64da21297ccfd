import { Column, Entity, PrimaryColumn } from 'typeorm';
import { UsageTotals } from 'src/modules/usage/entities/usage-totals.columns';

/**
 * One per-minute rollup of `usage_minute_rollups` (the finer level beside the hourly `usage_rollups`):
 * a workspace, a minute and one combination of the dimensions' values (null where the events had
 * none). The table has no primary key: its identity is the `UNIQUE NULLS NOT DISTINCT
 * (workspace_id, bucket, kind, key_id, model, provider, tool)` constraint, declared here as the
 * entity's primary columns.
 */
@Entity({ name: 'usage_minute_rollups' })
export class UsageMinuteRollup extends UsageTotals {
  @PrimaryColumn({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @PrimaryColumn({ name: 'bucket', type: 'timestamptz' })
  bucket: Date;

  @PrimaryColumn({ name: 'kind', type: 'text' })
  kind: string;

  @Column({ name: 'key_id', type: 'text', nullable: true, primary: true })
  keyId: string | null;

  @Column({ name: 'model', type: 'text', nullable: true, primary: true })
  model: string | null;

  @Column({ name: 'provider', type: 'text', nullable: true, primary: true })
  provider: string | null;

  @Column({ name: 'tool', type: 'text', nullable: true, primary: true })
  tool: string | null;
}
