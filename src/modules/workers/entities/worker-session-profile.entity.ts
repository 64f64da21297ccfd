import { Column, Entity, PrimaryColumn } from 'typeorm';

/** `worker_session_profiles`: A named environment session a Worker revision may reference (identity and status only). */
@Entity({ name: 'worker_session_profiles' })
export class WorkerSessionProfile {
  @PrimaryColumn({ name: 'id', type: 'text' })
  id: string;

  @Column({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @Column({ name: 'name', type: 'text' })
  name: string;

  @Column({ name: 'environment_class', type: 'text' })
  environmentClass: string;

  @Column({ name: 'description', type: 'text', nullable: true })
  description: string | null;

  @Column({ name: 'status', type: 'text' })
  status: 'active' | 'revoked';

  @Column({ name: 'created_by_user_id', type: 'text' })
  createdByUserId: string;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @Column({ name: 'revoked_at', type: 'timestamptz', precision: 3, nullable: true })
  revokedAt: Date | null;
}
