import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { WorkerPlan } from 'src/modules/workers/entities/worker-plan.entity';

/** Every statement on `worker_plans`, and the database probe of the Workers doctor. */
@Injectable()
export class WorkerPlansRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** The workspace's plan row, or null (the `free` plan). */
  find(workspaceId: string, manager: EntityManager = this.dataSource.manager): Promise<WorkerPlan | null> {
    return manager.findOneBy(WorkerPlan, { workspaceId });
  }

  /** True when PostgreSQL answers. */
  async reachable(): Promise<boolean> {
    // hand-written: the doctor's liveness probe, a statement on no table
    return this.dataSource.query(`SELECT 1`).then(
      () => true,
      () => false,
    );
  }
}
