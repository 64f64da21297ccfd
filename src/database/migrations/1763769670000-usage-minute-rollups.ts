import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Per-minute usage rollups beside the hourly ones (issue 23): a summary reads whole hours from
 * `usage_rollups`, whole minutes of its edge hours from `usage_minute_rollups` and raw events only
 * for the sub-minute remainder at each edge. Same shape, key and fillfactor as the hourly level
 * (the current minute's rows are updated by every batch: HOT updates need room on the page).
 * The events already projected are rolled up here, so the two levels agree from the start.
 */
export class UsageMinuteRollups1763769670000 implements MigrationInterface {
  name = 'UsageMinuteRollups1763769670000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE usage_minute_rollups (
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
        CONSTRAINT usage_minute_rollups_key UNIQUE NULLS NOT DISTINCT (workspace_id, dim, bucket, value)
      ) WITH (fillfactor = 50);

      INSERT INTO usage_minute_rollups
      SELECT workspace_id, d.dim, date_trunc('minute', occurred_at, 'UTC'), d.value,
             count(*), count(*) FILTER (WHERE kind = 'llm'), count(*) FILTER (WHERE NOT pricing_known),
             COALESCE(sum(usd_micros) FILTER (WHERE pricing_known), 0), sum(tokens_in), sum(tokens_out), sum(tokens_cached), sum(tokens_reasoning),
             count(*) FILTER (WHERE kind = 'tool'), count(*) FILTER (WHERE outcome = 'partial'), count(*) FILTER (WHERE outcome = 'failure'), max(ingested_at)
      FROM usage_events
      CROSS JOIN LATERAL (VALUES ('kind', kind), ('key', key_id), ('model', model), ('provider', provider), ('tool', tool)) AS d(dim, value)
      GROUP BY 1, 2, 3, 4;
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE usage_minute_rollups`);
  }
}
