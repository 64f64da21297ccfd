import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `usage_key_months`: each key's known-priced spend per UTC calendar month, kept by the usage
 * projection in the statement that writes the hourly rollups. The budget check of every ingested
 * batch summed the month's hourly key rollups of the workspace instead: by the end of a month, 50
 * keys used every hour are ~33,600 rows and ~50 ms a batch (bench/README.md, issue 32). Fillfactor
 * 50: the current month's rows are updated by every batch (HOT updates). The months already rolled
 * up are summed here from the hourly level, so both agree from the start.
 */
export class UsageKeyMonths1763769752000 implements MigrationInterface {
  name = 'UsageKeyMonths1763769752000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE usage_key_months (
        workspace_id text NOT NULL,
        key_id text NOT NULL,
        month timestamptz NOT NULL,
        usd_micros bigint NOT NULL,
        PRIMARY KEY (workspace_id, key_id, month)
      ) WITH (fillfactor = 50)`);
    await q.query(`
      INSERT INTO usage_key_months (workspace_id, key_id, month, usd_micros)
      SELECT workspace_id, value, date_trunc('month', bucket, 'UTC'), sum(usd_micros) FROM usage_rollups
      WHERE dim = 'key' AND value IS NOT NULL GROUP BY 1, 2, 3`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE usage_key_months`);
  }
}
