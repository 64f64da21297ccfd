import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * A window of `usage_gaps` whose events were lost. The table has no primary key: its identity is the
 * `UNIQUE (workspace_id, from_at, to_at)` constraint, declared here as the entity's primary columns.
 */
@Entity({ name: 'usage_gaps' })
export class UsageGap {
  @PrimaryColumn({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @PrimaryColumn({ name: 'from_at', type: 'timestamptz', precision: 3 })
  fromAt: Date;

  @PrimaryColumn({ name: 'to_at', type: 'timestamptz', precision: 3 })
  toAt: Date;

  @Column({ name: 'recorded_at', type: 'timestamptz', precision: 3 })
  recordedAt: Date;
}
