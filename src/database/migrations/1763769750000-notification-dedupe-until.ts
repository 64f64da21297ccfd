import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `notification_messages.dedupe_until`: until when a message's dedupe key can be emitted again (a
 * budget crossing until its month ends, `key.expiring` and `approval.expiring` until the expiry
 * they announce, `approval.resolved` until a day after the approval's expiry, when the expiry pass
 * stops looking for it). Retention keeps a message until then, so a dedupe key never
 * outlives its message while its event can recur (issue 32: a crossing on the 1st of a 31-day month
 * would otherwise be emitted again on the 31st). Existing messages take the instant their key names,
 * or their approval's; a key of an approval deleted since has nothing left to recur.
 */
export class NotificationDedupeUntil1763769750000 implements MigrationInterface {
  name = 'NotificationDedupeUntil1763769750000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE notification_messages ADD COLUMN dedupe_until timestamptz(3)`);
    await q.query(`
      UPDATE notification_messages SET dedupe_until = (substring(dedupe_key FROM '^budget:[^:]+:[0-9]+:(.+)$')::timestamptz AT TIME ZONE 'UTC' + interval '1 month') AT TIME ZONE 'UTC'
      WHERE dedupe_key LIKE 'budget:%'`);
    await q.query(`
      UPDATE notification_messages SET dedupe_until = substring(dedupe_key FROM '^key\\.expiring:[^:]+:(.+)$')::timestamptz
      WHERE dedupe_key LIKE 'key.expiring:%'`);
    await q.query(`
      UPDATE notification_messages m SET dedupe_until = CASE WHEN m.type = 'approval.expiring' THEN a.expires_at ELSE a.expires_at + interval '1 day' END
      FROM approvals a WHERE m.dedupe_key IN ('approval.expiring:' || a.id, 'approval.resolved:' || a.id) AND m.workspace_id = a.workspace_id`);
    await q.query(`UPDATE notification_messages SET dedupe_until = created_at WHERE dedupe_key IS NOT NULL AND dedupe_until IS NULL`);
    await q.query(`ALTER TABLE notification_messages ADD CONSTRAINT notification_messages_dedupe_until CHECK ((dedupe_key IS NULL) = (dedupe_until IS NULL))`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE notification_messages DROP COLUMN dedupe_until`);
  }
}
