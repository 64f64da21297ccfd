import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `notification_deliveries_endpoint_due`: an endpoint's pending deliveries in due order. A claim that
 * leaves out endpoints with a backlog finds the endpoints with pending rows by a skip scan of it and
 * reads each other endpoint's due rows from it, instead of walking the due index past every row of
 * the backlogs (docs/notifications.md, "Delivery").
 */
export class NotificationDeliveriesEndpointDue1763769751000 implements MigrationInterface {
  name = 'NotificationDeliveriesEndpointDue1763769751000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX notification_deliveries_endpoint_due ON notification_deliveries (endpoint_id, next_attempt_at) WHERE state = 'pending'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX notification_deliveries_endpoint_due`);
  }
}
