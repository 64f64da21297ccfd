import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { PlanName } from 'src/modules/workers/workers.data';

/** `worker_plans`: The workspace's Workers plan. */
@Entity({ name: 'worker_plans' })
export class WorkerPlan {
  @PrimaryColumn({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @Column({ name: 'plan', type: 'text' })
  plan: PlanName;

  @Column({ name: 'card_on_file', type: 'boolean' })
  cardOnFile: boolean;

  @Column({ name: 'updated_at', type: 'timestamptz', precision: 3 })
  updatedAt: Date;
}
