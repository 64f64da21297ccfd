import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Operator notifications (CONTRACT.md section 7): the transactional outbox of messages, the
 * per-workspace endpoints, one delivery row per (message, endpoint) and the attempt log.
 * `dedupe_key` makes events from time and ingestion exactly-once (insert ... on conflict do
 * nothing); `seq` orders the event stream's replay.
 */
export class Notifications1763769730000 implements MigrationInterface {
  name = 'Notifications1763769730000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE notification_endpoints (
        id text PRIMARY KEY,
        workspace_id text NOT NULL REFERENCES workspaces(id),
        url text NOT NULL,
        event_types text[] NOT NULL,
        format text NOT NULL CHECK (format IN ('standard', 'slack')),
        description text,
        enabled boolean NOT NULL,
        disabled_reason text CHECK (disabled_reason IN ('failing', 'gone', 'operator')),
        revision integer NOT NULL,
        secret text NOT NULL,
        previous_secret text,
        previous_secret_until timestamptz(3),
        secret_rotated_at timestamptz(3),
        failing_since timestamptz(3),
        created_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        updated_at timestamptz(3) NOT NULL DEFAULT clock_timestamp()
      )`);
    await q.query(`CREATE INDEX notification_endpoints_workspace ON notification_endpoints (workspace_id, created_at, id)`);
    await q.query(`
      CREATE TABLE notification_messages (
        id text PRIMARY KEY,
        workspace_id text NOT NULL,
        seq bigint GENERATED ALWAYS AS IDENTITY,
        type text NOT NULL,
        body text NOT NULL,
        dedupe_key text,
        created_at timestamptz(3) NOT NULL,
        UNIQUE (workspace_id, dedupe_key)
      )`);
    await q.query(`CREATE INDEX notification_messages_list ON notification_messages (workspace_id, created_at DESC, id DESC)`);
    await q.query(`CREATE INDEX notification_messages_seq ON notification_messages (workspace_id, seq)`);
    await q.query(`
      CREATE TABLE notification_deliveries (
        endpoint_id text NOT NULL REFERENCES notification_endpoints(id) ON DELETE CASCADE,
        message_id text NOT NULL REFERENCES notification_messages(id) ON DELETE CASCADE,
        workspace_id text NOT NULL,
        state text NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
        attempts integer NOT NULL DEFAULT 0,
        next_attempt_at timestamptz(3),
        last_attempt_at timestamptz(3),
        claimed_until timestamptz(3),
        PRIMARY KEY (endpoint_id, message_id)
      )`);
    await q.query(`CREATE INDEX notification_deliveries_due ON notification_deliveries (next_attempt_at) WHERE state = 'pending'`);
    await q.query(`CREATE INDEX notification_deliveries_message ON notification_deliveries (message_id)`);
    await q.query(`
      CREATE TABLE notification_attempts (
        id text PRIMARY KEY,
        workspace_id text NOT NULL,
        endpoint_id text NOT NULL REFERENCES notification_endpoints(id) ON DELETE CASCADE,
        message_id text NOT NULL,
        type text NOT NULL,
        attempt integer NOT NULL,
        status text NOT NULL CHECK (status IN ('succeeded', 'failed')),
        response_status integer,
        error text CHECK (error IN ('timeout', 'connection', 'refused_target', 'http_status')),
        duration_ms integer NOT NULL,
        response_excerpt text NOT NULL,
        attempted_at timestamptz(3) NOT NULL
      )`);
    await q.query(`CREATE INDEX notification_attempts_list ON notification_attempts (endpoint_id, attempted_at DESC, id DESC)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE notification_attempts, notification_deliveries, notification_messages, notification_endpoints`);
  }
}
