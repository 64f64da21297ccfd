import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { EnvironmentClass } from 'src/modules/workers/workers.data';
import type { RUN_STATES } from 'src/modules/workers/runs/dto/runs.dto';

/** `worker_runs`: A run or demo run handed to the orchestrator. */
@Entity({ name: 'worker_runs' })
export class WorkerRun {
  @PrimaryColumn({ name: 'id', type: 'text' })
  id: string;

  @Column({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @Column({ name: 'kind', type: 'text' })
  kind: string;

  @Column({ name: 'worker_id', type: 'text', nullable: true })
  workerId: string | null;

  @Column({ name: 'revision_id', type: 'text', nullable: true })
  revisionId: string | null;

  @Column({ name: 'template_id', type: 'text', nullable: true })
  templateId: string | null;

  @Column({ name: 'status', type: 'text' })
  status: (typeof RUN_STATES)[number];

  @Column({ name: 'environment_classes', type: 'text', array: true })
  environmentClasses: EnvironmentClass[];

  @Column({ name: 'session_profile_id', type: 'text', nullable: true })
  sessionProfileId: string | null;

  @Column({ name: 'input', type: 'jsonb' })
  input: Record<string, unknown>;

  @Column({ name: 'failure', type: 'jsonb', nullable: true })
  failure: Record<string, unknown> | null;

  @Column({ name: 'orchestrator_run_id', type: 'text', nullable: true })
  orchestratorRunId: string | null;

  @Column({ name: 'control_lease_id', type: 'text', nullable: true })
  controlLeaseId: string | null;

  @Column({ name: 'control_lease_holder', type: 'text', nullable: true })
  controlLeaseHolder: string | null;

  @Column({ name: 'control_lease_expires_at', type: 'timestamptz', precision: 3, nullable: true })
  controlLeaseExpiresAt: Date | null;

  @Column({ name: 'created_by_user_id', type: 'text' })
  createdByUserId: string;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', precision: 3 })
  updatedAt: Date;

  @Column({ name: 'ended_at', type: 'timestamptz', precision: 3, nullable: true })
  endedAt: Date | null;
}
