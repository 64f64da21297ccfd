import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `notification_fan_outs`: the messages whose delivery rows the dispatcher has not written yet, with
 * the endpoints the act addressed them to. The act decides who is addressed and writes one small
 * row here instead of a delivery row per endpoint; the dispatcher writes the delivery rows and
 * deletes it (docs/decisions.md, "Addressed by the act, fanned out by the dispatcher"). No foreign
 * key: the act would pay its check, and the fan-out joins the message anyway.
 *
 * The dedupe key's uniqueness becomes a partial index over the messages that have one (events from
 * time and ingestion): a message of an act has none, and its insert no longer writes an entry there
 * (the outbox write, timed alone: 0.30 ms, 0.27 without that entry; bench/README.md).
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
    await q.query(`CREATE UNIQUE INDEX notification_messages_dedupe ON notification_messages (workspace_id, dedupe_key) WHERE dedupe_key IS NOT NULL`);
    await q.query(`ALTER TABLE notification_messages DROP CONSTRAINT notification_messages_workspace_id_dedupe_key_key`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE notification_messages ADD CONSTRAINT notification_messages_workspace_id_dedupe_key_key UNIQUE (workspace_id, dedupe_key)`);
    await q.query(`DROP INDEX notification_messages_dedupe`);
    await q.query(`DROP TABLE notification_fan_outs`);
  }
}
