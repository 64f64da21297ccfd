import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Webhook subscriptions (the gateway's ingress configuration, published in the snapshot) and
 * webhook evidence events (immutable, no raw body) with their correlation to a receipt.
 *
 * A subscription is keyed by workspace, connection and its client-chosen `wsub_` id, as in the
 * ingress path. `signing_keys` holds the sealed signing-key contract: version, envelope, key id,
 * last4 and validity window per key (never plaintext).
 *
 * Evidence columns up to `received_at` are the event as the gateway sent it and are never
 * updated; `content_digest` makes a repeated `evidence_id` comparable. The correlation columns
 * (`correlation`, `receipt_id`, `stage`) and the evaluation hand-off (`evaluation_pending`,
 * `evaluate_after`: when the retry job may claim it) are control's own bookkeeping. Unmatched
 * evidence is found by `webhook_evidence_unmatched_idx` for re-correlation and expiry.
 *
 * `receipt_heads_webhook_candidates_idx` serves correlation: receipts awaiting evidence
 * (`staged_plan`, `pending`) by workspace, connection and upstream id.
 */
export class Webhooks1763769608000 implements MigrationInterface {
  name = 'Webhooks1763769608000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE webhook_subscriptions (
        workspace_id text NOT NULL REFERENCES workspaces(id),
        connection_id text NOT NULL REFERENCES connections(id) ON DELETE CASCADE,
        id text NOT NULL,
        signature_profile text NOT NULL,
        tolerance_seconds integer NOT NULL,
        notification_url text,
        signing_keys jsonb NOT NULL,
        revision integer NOT NULL,
        created_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        updated_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        PRIMARY KEY (workspace_id, connection_id, id)
      );

      CREATE TABLE webhook_evidence (
        evidence_id text PRIMARY KEY,
        workspace_id text NOT NULL REFERENCES workspaces(id),
        connection_id text NOT NULL,
        subscription_id text NOT NULL,
        event_type text NOT NULL,
        provider_event_id text NOT NULL,
        upstream_id text,
        idempotency_key text,
        trust text NOT NULL CHECK (trust IN ('vendor_signed', 'broker_attested')),
        signature_profile text NOT NULL,
        key_version integer NOT NULL,
        body_digest text NOT NULL,
        batch_position integer,
        results jsonb NOT NULL,
        received_at timestamptz(3) NOT NULL,
        content_digest text NOT NULL,
        correlation text NOT NULL CHECK (correlation IN ('matched', 'unmatched', 'ambiguous')),
        receipt_id text,
        stage text,
        evaluation_pending boolean NOT NULL,
        evaluate_after timestamptz(3) NOT NULL,
        recorded_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        CONSTRAINT webhook_evidence_match_check CHECK ((correlation = 'matched') = (receipt_id IS NOT NULL))
      );
      CREATE INDEX webhook_evidence_unmatched_idx ON webhook_evidence (received_at, evidence_id) WHERE correlation <> 'matched';
      CREATE INDEX webhook_evidence_evaluation_idx ON webhook_evidence (evaluate_after, evidence_id) WHERE evaluation_pending;

      CREATE INDEX receipt_heads_webhook_candidates_idx ON receipt_heads (workspace_id, connection_id, upstream_id)
        WHERE verification_method = 'staged_plan' AND verification_state = 'pending';
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX receipt_heads_webhook_candidates_idx; DROP TABLE webhook_evidence, webhook_subscriptions`);
  }
}
