import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Per-minute usage rollups beside the hourly ones (issue 23): a summary reads whole hours from
 * `usage_rollups`, whole minutes of its edge hours from `usage_minute_rollups` and raw events only
 * for the sub-minute remainder at each edge. One row per workspace, minute and combination of the
 * dimensions' values (the hourly level has one per dimension and value): a batch adds one minute
 * row per distinct event combination instead of one per dimension, and a summary groups the edge
 * minutes by the dimension it asks for. Fillfactor 50 like the hourly level (the current minute's
 * rows are updated by every batch: HOT updates need room on the page). The events already
 * projected are rolled up here, so the two levels agree from the start.
 */
export class UsageMinuteRollups1763769680000 implements MigrationInterface {
  name = 'UsageMinuteRollups1763769680000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE usage_minute_rollups (
        workspace_id text NOT NULL,
        bucket timestamptz NOT NULL,
        kind text NOT NULL,
        key_id text,
        model text,
        provider text,
        tool text,
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
        CONSTRAINT usage_minute_rollups_key UNIQUE NULLS NOT DISTINCT (workspace_id, bucket, kind, key_id, model, provider, tool)
      ) WITH (fillfactor = 50);

      INSERT INTO usage_minute_rollups
      SELECT workspace_id, date_trunc('minute', occurred_at, 'UTC'), kind, key_id, model, provider, tool,
             count(*), count(*) FILTER (WHERE kind = 'llm'), count(*) FILTER (WHERE NOT pricing_known),
             COALESCE(sum(usd_micros) FILTER (WHERE pricing_known), 0), sum(tokens_in), sum(tokens_out), sum(tokens_cached), sum(tokens_reasoning),
             count(*) FILTER (WHERE kind = 'tool'), count(*) FILTER (WHERE outcome = 'partial'), count(*) FILTER (WHERE outcome = 'failure'), max(ingested_at)
      FROM usage_events
      GROUP BY 1, 2, 3, 4, 5, 6, 7;
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE usage_minute_rollups`);
  }
}
