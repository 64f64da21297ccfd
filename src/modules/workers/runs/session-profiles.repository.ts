import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager, In } from 'typeorm';
import { WorkerSessionProfile } from 'src/modules/workers/entities/worker-session-profile.entity';

/** Every statement on `worker_session_profiles`. */
@Injectable()
export class SessionProfilesRepository {
  constructor(private readonly dataSource: DataSource) {}

  async insert(manager: EntityManager, row: Omit<WorkerSessionProfile, 'createdAt' | 'revokedAt'>): Promise<WorkerSessionProfile> {
    await manager.insert(WorkerSessionProfile, row);
    return manager.findOneByOrFail(WorkerSessionProfile, { workspaceId: row.workspaceId, id: row.id });
  }

  find(workspaceId: string, id: string, manager: EntityManager = this.dataSource.manager): Promise<WorkerSessionProfile | null> {
    return manager.findOneBy(WorkerSessionProfile, { workspaceId, id });
  }

  /** An active profile, or null (unknown or revoked). */
  findActive(manager: EntityManager, workspaceId: string, id: string): Promise<WorkerSessionProfile | null> {
    return manager.findOneBy(WorkerSessionProfile, { workspaceId, id, status: 'active' });
  }

  /** Which of `ids` name active profiles of the workspace. */
  async activeIds(manager: EntityManager, workspaceId: string, ids: string[]): Promise<Set<string>> {
    const rows = await manager.find(WorkerSessionProfile, { select: { id: true }, where: { workspaceId, id: In(ids), status: 'active' } });
    return new Set(rows.map((r) => r.id));
  }

  /** One page (`limit + 1` rows) in (created_at, id) order after `after`. */
  page(workspaceId: string, after: { at: Date; id: string } | null, limit: number): Promise<WorkerSessionProfile[]> {
    const query = this.dataSource.manager.createQueryBuilder(WorkerSessionProfile, 'p').where('p.workspaceId = :workspaceId', { workspaceId });
    // hand-written: keyset page over (created_at, id), a row-value comparison find options cannot express
    if (after) query.andWhere('(p.createdAt, p.id) > (:at, :id)', after);
    return query.orderBy('p.createdAt').addOrderBy('p.id').limit(limit + 1).getMany();
  }

  /** Revokes the profile (the first revocation time stays); null when the workspace has no such profile. */
  async revoke(manager: EntityManager, workspaceId: string, id: string): Promise<WorkerSessionProfile | null> {
    const key = { workspaceId, id };
    const { affected } = await manager.update(WorkerSessionProfile, key, { status: 'revoked', revokedAt: () => 'coalesce(revoked_at, clock_timestamp())' });
    return affected ? manager.findOneByOrFail(WorkerSessionProfile, key) : null;
  }
}
