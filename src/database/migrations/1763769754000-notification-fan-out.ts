import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `notification_messages.fan_out`: the endpoints the act addressed whose delivery rows are not
 * written yet. The act decides who is addressed and stores it on the message (one array, no row
 * per endpoint); the dispatcher writes the delivery rows and clears it (docs/decisions.md, "The
 * outbox write: addressed by the act, fanned out by the dispatcher"). Only messages waiting for
 * their fan-out are in `notification_messages_fan_out`.
 */
export class NotificationFanOut1763769754000 implements MigrationInterface {
  name = 'NotificationFanOut1763769754000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE notification_messages ADD COLUMN fan_out text[]`);
    await q.query(`CREATE INDEX notification_messages_fan_out ON notification_messages (seq) WHERE fan_out IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX notification_messages_fan_out`);
    await q.query(`ALTER TABLE notification_messages DROP COLUMN fan_out`);
  }
}
