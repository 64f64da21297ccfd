import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `notification_fan_outs`: the messages whose delivery rows the dispatcher has not written yet, with
 * the endpoints the act addressed them to. The act decides who is addressed and writes one small
 * row here instead of a delivery row per endpoint; the dispatcher writes the delivery rows and
 * deletes it (docs/decisions.md, "Addressed by the act, fanned out by the dispatcher"). No foreign
 * key: the act would pay its check, and the fan-out joins the message anyway.
 */
export class NotificationFanOut1763769754000 implements MigrationInterface {
  name = 'NotificationFanOut1763769754000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE notification_fan_outs (
        message_id text PRIMARY KEY,
        workspace_id text NOT NULL,
        endpoint_ids text[] NOT NULL,
        created_at timestamptz(3) NOT NULL
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE notification_fan_outs`);
  }
}
