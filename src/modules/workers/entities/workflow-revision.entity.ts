import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { WorkflowStep } from 'src/modules/workers/definitions/workflow-graph';

/** `workflow_revisions`: One revision of a workflow. */
@Entity({ name: 'workflow_revisions' })
export class WorkflowRevision {
  @PrimaryColumn({ name: 'id', type: 'text' })
  id: string;

  @Column({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @Column({ name: 'workflow_id', type: 'text' })
  workflowId: string;

  @Column({ name: 'revision_number', type: 'integer' })
  revisionNumber: number;

  @Column({ name: 'state', type: 'text' })
  state: string;

  @Column({ name: 'steps', type: 'jsonb' })
  steps: WorkflowStep[];

  @Column({ name: 'permitted_trigger_types', type: 'jsonb' })
  permittedTriggerTypes: string[];

  @Column({ name: 'revision_digest', type: 'text', nullable: true })
  revisionDigest: string | null;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @Column({ name: 'published_at', type: 'timestamptz', precision: 3, nullable: true })
  publishedAt: Date | null;
}
