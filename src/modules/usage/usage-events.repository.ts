import { Injectable } from '@nestjs/common';
import { EntityManager, LessThan } from 'typeorm';
import { deleteAtMost } from 'src/database/delete-at-most';
import { namedQueryIn } from 'src/database/named-query';
import { cappedKeysAmong, recordKeyUse } from 'src/modules/keys/key-fragments.repository';
import { messageWritten } from 'src/modules/notifications/notification-messages.repository';
import { UsageGap as UsageGapRow } from 'src/modules/usage/entities/usage-gap.entity';
import { arrayLiteral } from 'src/modules/streams/array-literal';
import { DIMENSIONS, EVENT_TOTALS, TOTALS_FIELDS, UsageEvent, UsageGap } from 'src/modules/usage/usage-vocabulary';

/** Columns of `usage_events` taken from the batch (ingested_at is the transaction's time). */
const EVENT_COLUMNS = [
  ['workspace_id', 'text'],
  ['occurred_at', 'timestamptz'],
  ['event_id', 'text'],
  ['kind', 'text'],
  ['key_id', 'text'],
  ['model', 'text'],
  ['provider', 'text'],
  ['tool', 'text'],
  ['pricing_known', 'boolean'],
  ['outcome', 'text'],
  ['usd_micros', 'bigint'],
  ['tokens_in', 'bigint'],
  ['tokens_out', 'bigint'],
  ['tokens_cached', 'bigint'],
  ['tokens_reasoning', 'bigint'],
] as const;
const NAMES = EVENT_COLUMNS.map(([name]) => name).join(', ');

/** The event columns the rollups group on: one per dimension. */
const DIMENSION_COLUMNS = Object.values(DIMENSIONS).join(', ');

/** Adds each total of a rollup row (aliased `r`) to the row of its key. */
const ADD_TOTALS = `
    ${TOTALS_FIELDS.map((f) => `${f} = r.${f} + EXCLUDED.${f}`).join(', ')},
    last_ingested_at = GREATEST(r.last_ingested_at, EXCLUDED.last_ingested_at)`;

/** The budget thresholds a projection is asked about: the current UTC month and its dedupe-key form. */
export interface BudgetQuery {
  month: Date;
  thresholds: readonly number[];
  /** The month as the dedupe key names it (`budget:{key}:{threshold}:{month}`). */
  dedupeMonth: string;
}

/** A budget threshold a capped key of the batch has reached this month, without its message yet. */
export interface BudgetCrossing {
  workspace_id: string;
  key_id: string;
  agent_id: string;
  /** The cap and the month's spend, int64 as decimal strings. */
  cap: string;
  spent: string;
  threshold: number;
  /** The outbox's dedupe key of this crossing (`budget:{key}:{threshold}:{month}`), spelled here only. */
  dedupe_key: string;
}

const ROLLUPS = `INSERT INTO usage_rollups AS r (workspace_id, dim, bucket, value, ${TOTALS_FIELDS.join(', ')}, last_ingested_at)
  SELECT workspace_id, d.dim, date_trunc('hour', bucket, 'UTC'), d.value, ${TOTALS_FIELDS.map((f) => `sum(${f})`).join(', ')}, max(last_ingested_at)
  FROM minutes
  CROSS JOIN LATERAL (VALUES ${Object.entries(DIMENSIONS).map(([dim, column]) => `('${dim}', ${column})`).join(', ')}) AS d(dim, value)
  GROUP BY 1, 2, 3, 4
  ORDER BY 1, 2, 3, 4
  ON CONFLICT (workspace_id, dim, bucket, value) DO UPDATE SET ${ADD_TOTALS}`;

const P = EVENT_COLUMNS.length;

/**
 * Inserts the new events (a redelivered `event_id` is skipped), adds exactly the inserted ones to
 * the per-minute rollup (one row per minute and combination of the dimensions' values) and, from
 * those rows, to the hourly rollup of every dimension (both levels always hold the same events)
 * and to each key's month (`usage_key_months`), and moves each named key's `last_used_at` forward,
 * in one statement. The key-use part is the keys module's statement (`recordKeyUse`, on its own
 * tables), joined here on a measured hot path (bench/key-last-use.ts: a statement of its own per
 * batch cost ingestion a round trip and a scan).
 *
 * With `budget`, the same statement answers the budget check: the thresholds reached this month by
 * the capped keys of the batch (keys' fragment), from their months as this statement left them (the
 * spend after this batch and every batch committed before it), whose message is not written yet
 * (notifications' fragment). The check was a statement of its own per batch, a round trip that held
 * ingestion at 0.90-0.95 of the rate without the check (bench/notifications.ts figure 3).
 */
// hand-written: the stream projection and its rollups, one batched statement (single-row writes are fsync-bound; bench/read-models);
// named (planned once per connection), on the ingestion path.
const projectStatement = (budget: boolean) => ({
  name: budget ? 'usage_project_budget' : 'usage_project',
  text: `
  WITH inserted AS (
    INSERT INTO usage_events (${NAMES}, ingested_at)
    SELECT *, now() FROM unnest(${EVENT_COLUMNS.map(([, type], i) => `$${i + 1}::${type}[]`).join(', ')})
    ON CONFLICT DO NOTHING
    RETURNING *
  ),
  minutes AS (
    SELECT workspace_id, date_trunc('minute', occurred_at, 'UTC') AS bucket, ${DIMENSION_COLUMNS},
           ${TOTALS_FIELDS.map((f) => `${EVENT_TOTALS[f]} AS ${f}`).join(', ')}, max(ingested_at) AS last_ingested_at
    FROM inserted
    GROUP BY workspace_id, bucket, ${DIMENSION_COLUMNS}
  ),
  minute_rollups AS (
    INSERT INTO usage_minute_rollups AS r (workspace_id, bucket, ${DIMENSION_COLUMNS}, ${TOTALS_FIELDS.join(', ')}, last_ingested_at)
    SELECT * FROM minutes ORDER BY workspace_id, bucket, ${DIMENSION_COLUMNS}
    ON CONFLICT (workspace_id, bucket, ${DIMENSION_COLUMNS}) DO UPDATE SET ${ADD_TOTALS}
  ),
  key_months AS (
    INSERT INTO usage_key_months AS r (workspace_id, key_id, month, usd_micros)
    SELECT workspace_id, key_id, date_trunc('month', bucket, 'UTC'), sum(usd_micros) FROM minutes WHERE key_id IS NOT NULL
    GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (workspace_id, key_id, month) DO UPDATE SET usd_micros = r.usd_micros + EXCLUDED.usd_micros
    RETURNING workspace_id, key_id, month, usd_micros
  ),
  key_use AS (${recordKeyUse('inserted')})
  ${
    budget
      ? `, rollups AS (${ROLLUPS}),
  spend AS (SELECT workspace_id, key_id, usd_micros FROM key_months WHERE month = $${P + 1})
  SELECT c.workspace_id, c.id AS key_id, c.agent_id, c.cap::text AS cap, s.usd_micros::text AS spent, t.threshold, k.dedupe_key
  FROM (${cappedKeysAmong(`ARRAY(SELECT workspace_id FROM spend ORDER BY workspace_id, key_id)`, `ARRAY(SELECT key_id FROM spend ORDER BY workspace_id, key_id)`)}) c
  JOIN spend s ON s.workspace_id = c.workspace_id AND s.key_id = c.id
  CROSS JOIN unnest($${P + 2}::int[]) AS t(threshold)
  CROSS JOIN LATERAL (SELECT 'budget:' || c.id || ':' || t.threshold || ':' || $${P + 3} AS dedupe_key) k
  WHERE s.usd_micros::numeric * 100 >= c.cap * t.threshold
    AND NOT ${messageWritten('c.workspace_id', 'k.dedupe_key')}
  ORDER BY c.workspace_id, c.id, t.threshold`
      : ROLLUPS
  }`,
});
const PROJECT = projectStatement(false);
const PROJECT_WITH_BUDGET = projectStatement(true);

/** The writes of the usage read model: `usage_events` with both rollup levels, `usage_gaps`, and their retention. */
@Injectable()
export class UsageEventsRepository {
  /**
   * Projects events (distinct by workspace and event id) with their rollups, in the caller's
   * transaction; with `budget`, answers the thresholds crossed (PROJECT_WITH_BUDGET).
   */
  async projectEvents(manager: EntityManager, events: UsageEvent[], budget?: BudgetQuery): Promise<BudgetCrossing[]> {
    if (events.length === 0) return [];
    // Times travel as ISO strings (a Date would be written in its local-time form).
    const columns = EVENT_COLUMNS.map(([name]) => arrayLiteral(events.map((e) => (name === 'occurred_at' ? e.occurred_at.toISOString() : e[name]))));
    if (!budget) {
      await namedQueryIn(manager, PROJECT, columns);
      return [];
    }
    return namedQueryIn<BudgetCrossing>(manager, PROJECT_WITH_BUDGET, [...columns, budget.month, budget.thresholds, budget.dedupeMonth]);
  }

  /**
   * Sums every key's month `[month, next)` again from the hourly key rollups, in the caller's
   * transaction: for a month that replicas of the code before `usage_key_months` ingested into
   * after its migration (their events reached the rollups only). The lock holds projections off
   * until the caller commits (each projection writes both in one statement), so none is counted
   * twice or lost. The number of key months written.
   */
  async resumKeyMonth(manager: EntityManager, month: Date, next: Date): Promise<number> {
    // hand-written: a table lock, and the migration's sum for one month (src/database/migrations/1763769752000-usage-key-months.ts).
    await manager.query(`LOCK TABLE usage_key_months IN SHARE ROW EXCLUSIVE MODE`);
    await manager.query(`DELETE FROM usage_key_months WHERE month = $1`, [month]);
    const written: unknown[] = await manager.query(
      `INSERT INTO usage_key_months (workspace_id, key_id, month, usd_micros)
       SELECT workspace_id, value, $1, sum(usd_micros) FROM usage_rollups
       WHERE dim = 'key' AND value IS NOT NULL AND bucket >= $1 AND bucket < $2 GROUP BY 1, 2 RETURNING 1`,
      [month, next],
    );
    return written.length;
  }

  /** Records gap windows (one already recorded is kept once), in the caller's transaction. */
  async insertGaps(manager: EntityManager, gaps: UsageGap[]): Promise<void> {
    if (gaps.length === 0) return;
    // hand-written: unnest-batched ON CONFLICT DO NOTHING (a parked batch names up to BATCH_LIMIT gaps, past a VALUES list's parameter limit).
    await manager.query(
      `INSERT INTO usage_gaps (workspace_id, from_at, to_at) SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::timestamptz[]) ON CONFLICT DO NOTHING`,
      [gaps.map((g) => g.workspace_id), gaps.map((g) => g.from), gaps.map((g) => g.to)],
    );
  }

  /**
   * Rollups of both levels and gap markers of the workspace older than the cutoff, at most `limit`
   * rollup rows in all, in the caller's transaction; raw events go with their partitions.
   */
  async retain(manager: EntityManager, workspaceId: string, cutoff: Date, limit: number): Promise<number> {
    // hand-written (deleteAtMost): a bounded DELETE by ctid; the rollup tables have no key to match rows back by.
    let deleted = await deleteAtMost(manager, 'usage_rollups', 'workspace_id = $1 AND bucket < $2 AND dim = ANY($3)', [workspaceId, cutoff, Object.keys(DIMENSIONS)], limit);
    if (deleted < limit) deleted += await deleteAtMost(manager, 'usage_minute_rollups', 'workspace_id = $1 AND bucket < $2', [workspaceId, cutoff], limit - deleted);
    // A key's month goes once all of it is older than the cutoff (its spend is the budget check's while the month runs).
    if (deleted < limit) deleted += await deleteAtMost(manager, 'usage_key_months', `workspace_id = $1 AND month + interval '1 month' <= $2`, [workspaceId, cutoff], limit - deleted);
    await manager.delete(UsageGapRow, { workspaceId, toAt: LessThan(cutoff) });
    return deleted;
  }
}
