import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager, IsNull, Not } from 'typeorm';
import { WorkerRevision } from 'src/modules/workers/entities/worker-revision.entity';
import { Worker } from 'src/modules/workers/entities/worker.entity';
import { RevisionedRepository } from 'src/modules/workers/definitions/revisioned.repository';

/** Every statement on `workers` and `worker_revisions` (the shared ones in RevisionedRepository). */
@Injectable()
export class WorkersRepository extends RevisionedRepository<Worker, WorkerRevision> {
  constructor(dataSource: DataSource) {
    super(dataSource, Worker, WorkerRevision, 'workerId');
  }

  /** The ids of the workspace's Workers that have a published revision. */
  async publishedIds(manager: EntityManager, workspaceId: string): Promise<Set<string>> {
    const rows = await manager.find(Worker, { select: { id: true }, where: { workspaceId, publishedRevisionId: Not(IsNull()) } });
    return new Set(rows.map((r) => r.id));
  }
}
