import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Read models projected from the gateway streams: receipt revisions and raw usage events are
 * partitioned by calendar month (UTC) so retention drops whole partitions; receipt heads (the
 * newest revision of each invocation), per-workspace receipt counters and hourly usage rollups
 * are maintained at ingestion so reads never scan raw rows.
 */
export class ReadModels1763769604000 implements MigrationInterface {
  name = 'ReadModels1763769604000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE FUNCTION read_model_ensure_partition(parent text, month_start date) RETURNS void
      LANGUAGE plpgsql AS $$
      DECLARE
        first date := date_trunc('month', month_start)::date;
      BEGIN
        PERFORM pg_advisory_xact_lock(hashtext('read_model_partitions'));
        EXECUTE format(
          'CREATE TABLE IF NOT EXISTS %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)',
          parent || '_p' || to_char(first, 'YYYYMM'),
          parent,
          to_char(first, 'YYYY-MM-DD') || ' 00:00:00+00',
          to_char((first + interval '1 month')::date, 'YYYY-MM-DD') || ' 00:00:00+00'
        );
      END $$;

      CREATE TABLE receipt_revisions (
        workspace_id text NOT NULL,
        invocation_id text NOT NULL,
        receipt_revision integer NOT NULL,
        receipt_id text NOT NULL,
        tool text,
        key_id text,
        connection_id text,
        state text NOT NULL,
        decision text NOT NULL,
        dispatch_state text NOT NULL,
        evidence_trust text NOT NULL,
        verification_state text NOT NULL,
        verification_method text NOT NULL,
        effect_claim text,
        verification_evidence_trust text,
        vendor_http_status integer,
        upstream_id text,
        latency_ms integer,
        usd_micros bigint,
        attempt_count integer NOT NULL,
        occurred_at timestamptz(3) NOT NULL,
        updated_at timestamptz(3) NOT NULL,
        idempotency_key text,
        request_id text,
        policy_id text,
        policy_revision_id text,
        envelope jsonb,
        PRIMARY KEY (workspace_id, invocation_id, receipt_revision, occurred_at)
      ) PARTITION BY RANGE (occurred_at);
      CREATE INDEX receipt_revisions_receipt_idx ON receipt_revisions (workspace_id, receipt_id);

      CREATE TABLE receipt_heads (
        invocation_id text PRIMARY KEY,
        workspace_id text NOT NULL,
        receipt_id text COLLATE "C" NOT NULL,
        receipt_revision integer NOT NULL,
        tool text,
        key_id text,
        connection_id text,
        state text NOT NULL,
        decision text NOT NULL,
        dispatch_state text NOT NULL,
        evidence_trust text NOT NULL,
        verification_state text NOT NULL,
        verification_method text NOT NULL,
        effect_claim text,
        verification_evidence_trust text,
        vendor_http_status integer,
        upstream_id text,
        latency_ms integer,
        usd_micros bigint,
        attempt_count integer NOT NULL,
        occurred_at timestamptz(3) NOT NULL,
        updated_at timestamptz(3) NOT NULL
      );
      CREATE INDEX receipt_heads_list_idx ON receipt_heads (workspace_id, occurred_at, receipt_id);

      CREATE TABLE receipt_counters (
        workspace_id text PRIMARY KEY,
        total bigint NOT NULL,
        last_at timestamptz(3)
      );

      CREATE TABLE usage_events (
        workspace_id text NOT NULL,
        occurred_at timestamptz(3) NOT NULL,
        event_id text NOT NULL,
        ingested_at timestamptz(3) NOT NULL,
        kind text NOT NULL,
        key_id text,
        model text,
        provider text,
        tool text,
        pricing_known boolean NOT NULL,
        outcome text NOT NULL,
        usd_micros bigint NOT NULL,
        tokens_in bigint NOT NULL,
        tokens_out bigint NOT NULL,
        tokens_cached bigint NOT NULL,
        tokens_reasoning bigint NOT NULL,
        PRIMARY KEY (workspace_id, occurred_at, event_id)
      ) PARTITION BY RANGE (occurred_at);

      CREATE TABLE usage_rollups (
        workspace_id text NOT NULL,
        dim text NOT NULL,
        bucket timestamptz NOT NULL,
        value text,
        event_count bigint NOT NULL,
        llm_requests bigint NOT NULL,
        unpriced_count bigint NOT NULL,
        usd_micros bigint NOT NULL,
        tokens_in bigint NOT NULL,
        tokens_out bigint NOT NULL,
        tokens_cached bigint NOT NULL,
        tokens_reasoning bigint NOT NULL,
        tool_calls bigint NOT NULL,
        partial_count bigint NOT NULL,
        failure_count bigint NOT NULL,
        last_ingested_at timestamptz(3) NOT NULL,
        CONSTRAINT usage_rollups_key UNIQUE NULLS NOT DISTINCT (workspace_id, dim, bucket, value)
      );

      CREATE TABLE usage_gaps (
        workspace_id text NOT NULL,
        from_at timestamptz(3) NOT NULL,
        to_at timestamptz(3) NOT NULL,
        recorded_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        CONSTRAINT usage_gaps_key UNIQUE (workspace_id, from_at, to_at)
      );

      CREATE TABLE stream_parked (
        stream text NOT NULL,
        entry_id text NOT NULL,
        workspace_id text,
        reason text NOT NULL,
        data text,
        parked_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        PRIMARY KEY (stream, entry_id)
      );

      SELECT read_model_ensure_partition(parent, (date_trunc('month', now() AT TIME ZONE 'UTC') + m * interval '1 month')::date)
      FROM unnest(ARRAY['receipt_revisions', 'usage_events']) AS parent, generate_series(-1, 2) AS m;
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      DROP TABLE stream_parked, usage_gaps, usage_rollups, usage_events, receipt_counters, receipt_heads, receipt_revisions;
      DROP FUNCTION read_model_ensure_partition(text, date);
    `);
  }
}
