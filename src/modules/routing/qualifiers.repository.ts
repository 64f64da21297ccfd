import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { RouteQualifier } from 'src/modules/routing/entities/route-qualifier.entity';

/** The columns a qualifier write sets (its key and revision aside). */
export type QualifierValues = Pick<
  RouteQualifier,
  | 'capabilityId'
  | 'onlyTargets'
  | 'ignoreTargets'
  | 'pinTarget'
  | 'preferAuth'
  | 'preferSurface'
  | 'preferSources'
  | 'minQuality'
  | 'maxCost'
  | 'allowFallbacks'
>;

/** `route_qualifiers`: every statement on the workspace's routing rules. */
@Injectable()
export class QualifiersRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** The workspace's qualifiers by id (in `manager`, the snapshot build's transaction, or outside a transaction when undefined). */
  list(manager: EntityManager | undefined, workspaceId: string): Promise<RouteQualifier[]> {
    return (manager ?? this.dataSource.manager).find(RouteQualifier, { where: { workspaceId }, order: { qualifierId: 'ASC' } });
  }

  /** The qualifier locked `FOR UPDATE`; null when there is none. */
  lock(manager: EntityManager, workspaceId: string, qualifierId: string): Promise<RouteQualifier | null> {
    return manager.findOne(RouteQualifier, { where: { workspaceId, qualifierId }, lock: { mode: 'pessimistic_write' } });
  }

  count(manager: EntityManager, workspaceId: string): Promise<number> {
    return manager.countBy(RouteQualifier, { workspaceId });
  }

  /** Inserts revision 1 of a qualifier; returns the row as written (database defaults not read back). */
  async insert(manager: EntityManager, workspaceId: string, qualifierId: string, values: QualifierValues): Promise<RouteQualifier> {
    const row = manager.create(RouteQualifier, { workspaceId, qualifierId, revision: 1, ...values });
    await manager.insert(RouteQualifier, row);
    return row;
  }

  /** Replaces a qualifier's values at `revision`, `updated_at` on the database clock. */
  async update(manager: EntityManager, workspaceId: string, qualifierId: string, revision: number, values: QualifierValues): Promise<void> {
    await manager.update(RouteQualifier, { workspaceId, qualifierId }, { revision, ...values, updatedAt: () => 'clock_timestamp()' });
  }

  async delete(manager: EntityManager, workspaceId: string, qualifierId: string): Promise<void> {
    await manager.delete(RouteQualifier, { workspaceId, qualifierId });
  }
}
