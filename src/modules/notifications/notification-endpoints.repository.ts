import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { NotificationEndpoint } from 'src/modules/notifications/entities/notification-endpoint.entity';

/** Every statement on `notification_endpoints`. */
@Injectable()
export class NotificationEndpointsRepository {
  constructor(private readonly dataSource: DataSource) {}

  list(workspaceId: string): Promise<NotificationEndpoint[]> {
    return this.dataSource.manager.find(NotificationEndpoint, { where: { workspaceId }, order: { createdAt: 'ASC', id: 'ASC' } });
  }

  find(workspaceId: string, id: string, manager: EntityManager = this.dataSource.manager, lock = false): Promise<NotificationEndpoint | null> {
    return manager.findOne(NotificationEndpoint, { where: { workspaceId, id }, ...(lock ? { lock: { mode: 'pessimistic_write' as const } } : {}) });
  }

  count(manager: EntityManager, workspaceId: string): Promise<number> {
    return manager.count(NotificationEndpoint, { where: { workspaceId } });
  }

  async insert(manager: EntityManager, row: Omit<NotificationEndpoint, 'createdAt' | 'updatedAt'>): Promise<NotificationEndpoint> {
    await manager.insert(NotificationEndpoint, row);
    return manager.findOneByOrFail(NotificationEndpoint, { workspaceId: row.workspaceId, id: row.id });
  }

  async update(manager: EntityManager, workspaceId: string, id: string, values: Partial<NotificationEndpoint>): Promise<NotificationEndpoint> {
    await manager.update(NotificationEndpoint, { workspaceId, id }, { ...values, updatedAt: () => 'clock_timestamp()' });
    return manager.findOneByOrFail(NotificationEndpoint, { workspaceId, id });
  }

  async delete(manager: EntityManager, workspaceId: string, id: string): Promise<boolean> {
    const { affected } = await manager.delete(NotificationEndpoint, { workspaceId, id });
    return !!affected;
  }

  /** Disables an endpoint (`failing` or `gone`) unless it is already disabled: the endpoint when this call did it, else null. */
  async disable(manager: EntityManager, id: string, reason: 'failing' | 'gone'): Promise<NotificationEndpoint | null> {
    // UPDATE ... RETURNING answers [rows, count] through TypeORM.
    const [rows]: [{ id: string }[], number] = await manager.query(
      `UPDATE notification_endpoints SET enabled = false, disabled_reason = $2, revision = revision + 1, updated_at = clock_timestamp()
       WHERE id = $1 AND enabled RETURNING id`,
      [id, reason],
    );
    return rows.length ? manager.findOneByOrFail(NotificationEndpoint, { id }) : null;
  }

}
