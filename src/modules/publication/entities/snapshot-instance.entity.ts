import { Column, Entity, PrimaryColumn } from 'typeorm';

/** `snapshot_instances`: the snapshot a gateway instance last reported applying. */
@Entity({ name: 'snapshot_instances' })
export class SnapshotInstance {
  @PrimaryColumn({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @PrimaryColumn({ name: 'instance_id', type: 'text' })
  instanceId: string;

  @Column({ name: 'version', type: 'integer' })
  version: number;

  @Column({ name: 'digest', type: 'text' })
  digest: string;

  @Column({ name: 'applied_at', type: 'timestamptz', precision: 3 })
  appliedAt: Date;

  @Column({ name: 'reported_at', type: 'timestamptz', precision: 3 })
  reportedAt: Date;
}
