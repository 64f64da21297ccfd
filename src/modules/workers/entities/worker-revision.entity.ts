import { Column, Entity, PrimaryColumn } from 'typeorm';

/** `worker_revisions`: One revision of a Worker. */
@Entity({ name: 'worker_revisions' })
export class WorkerRevision {
  @PrimaryColumn({ name: 'id', type: 'text' })
  id: string;

  @Column({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @Column({ name: 'worker_id', type: 'text' })
  workerId: string;

  @Column({ name: 'revision_number', type: 'integer' })
  revisionNumber: number;

  @Column({ name: 'state', type: 'text' })
  state: string;

  @Column({ name: 'body', type: 'jsonb' })
  body: Record<string, unknown>;

  @Column({ name: 'permission_preset', type: 'text' })
  permissionPreset: string;

  @Column({ name: 'policy_revision_id', type: 'text' })
  policyRevisionId: string;

  @Column({ name: 'execution_mode', type: 'text' })
  executionMode: string;

  @Column({ name: 'limits', type: 'jsonb' })
  limits: Record<string, unknown>;

  @Column({ name: 'allowed_capabilities', type: 'jsonb' })
  allowedCapabilities: string[];

  @Column({ name: 'ui_actions', type: 'jsonb' })
  uiActions: string[];

  @Column({ name: 'revision_digest', type: 'text', nullable: true })
  revisionDigest: string | null;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @Column({ name: 'published_at', type: 'timestamptz', precision: 3, nullable: true })
  publishedAt: Date | null;
}
