import { Column, Entity, PrimaryColumn } from 'typeorm';

/** `worker_run_artifacts`: An artifact a run produced (its digest and metadata, not its content). */
@Entity({ name: 'worker_run_artifacts' })
export class WorkerRunArtifact {
  @PrimaryColumn({ name: 'id', type: 'text' })
  id: string;

  @Column({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @Column({ name: 'run_id', type: 'text' })
  runId: string;

  @Column({ name: 'name', type: 'text' })
  name: string;

  @Column({ name: 'media_type', type: 'text' })
  mediaType: string;

  @Column({ name: 'size_bytes', type: 'bigint' })
  sizeBytes: string;

  @Column({ name: 'digest', type: 'text' })
  digest: string;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @Column({ name: 'expires_at', type: 'timestamptz', precision: 3 })
  expiresAt: Date;
}
