import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { TimeWindow } from 'src/common/time/time';
import { namedQuery } from 'src/database/named-query';
import { Dimension, DIMENSIONS, EVENT_TOTALS, TOTALS_FIELDS, TotalsField } from 'src/modules/usage/usage-vocabulary';

/** One row of a summary: a group value's totals, or (`is_total` 1) the window's. */
export type SummaryRow = Record<TotalsField, string | null> & { is_total: number; value: string | null; freshness_at: Date | null };

/** The parameters of the summary statement: the window and its split over the levels (`splitWindow`). */
export interface SummaryRange {
  window: TimeWindow;
  hours: TimeWindow;
  minutes: TimeWindow;
  /** The end of the window rounded up to the minute and to the hour. */
  minuteEnd: Date;
  hourEnd: Date;
  tailHour: boolean;
}

/**
 * Whole hours of the window come from the hourly rollups, whole minutes of its edge hours from the
 * per-minute rollups and the sub-minute remainder at each edge from the raw events: exact for any
 * window, a 30-day window reads ~720 hourly rows per group value and at most 118 minutes of
 * minute rows (one per combination of the dimensions' values seen in the minute), and the raw
 * events read are those of less than a minute at each edge, however busy the hour. At the end,
 * where a window ending now has its edge, a bucket is read whole when no event of it lies at or
 * after `to` (the rest of it is the future; an index probe tells): the hour's rollup when nothing
 * lies in `[to, ceil_hour(to))`, else the last minute's rollup for the remainder when nothing lies
 * in `[to, ceil_minute(to))`.
 */
// hand-written: a named statement over both rollup levels and the partitioned raw events (a raw 30-day aggregate takes ~750 ms; bench/read-models).
function summaryStatement(groupBy: Dimension) {
  const sums = TOTALS_FIELDS.map((f) => `sum(${f})::text AS ${f}`).join(', ');
  const hours = (range: string) =>
    `SELECT value AS g, ${TOTALS_FIELDS.join(', ')}, last_ingested_at AS fresh FROM usage_rollups WHERE workspace_id = $1 AND dim = '${groupBy}' AND ${range}`;
  const minutes = (range: string) =>
    `SELECT ${DIMENSIONS[groupBy]}, ${TOTALS_FIELDS.join(', ')}, last_ingested_at FROM usage_minute_rollups WHERE workspace_id = $1 AND ${range}`;
  const raw = (range: string) =>
    `SELECT ${DIMENSIONS[groupBy]}, ${TOTALS_FIELDS.map((f) => EVENT_TOTALS[f]).join(', ')}, max(ingested_at)
     FROM usage_events WHERE workspace_id = $1 AND ${range} GROUP BY ${DIMENSIONS[groupBy]}`;
  const nothingFrom = (end: string) => `NOT EXISTS (SELECT 1 FROM usage_events WHERE workspace_id = $1 AND occurred_at >= $7 AND occurred_at < ${end})`;
  return {
    name: `usage_summary_${groupBy}`,
    text: `
      WITH tail AS (
        SELECT $9::boolean AND ${nothingFrom('$10')} AS whole_hour, ${nothingFrom('$8')} AS whole_minute
      ),
      source AS (
        ${hours('bucket >= $2 AND bucket < $3')}
        UNION ALL
        ${hours('bucket = $3 AND (SELECT whole_hour FROM tail)')}
        UNION ALL
        ${minutes('bucket >= $4 AND bucket < $2')}
        UNION ALL
        ${minutes('bucket >= $3 AND bucket < $5 AND NOT (SELECT whole_hour FROM tail)')}
        UNION ALL
        ${raw('occurred_at >= $6 AND occurred_at < $4')}
        UNION ALL
        ${raw('occurred_at >= $5 AND occurred_at < $7 AND NOT (SELECT whole_hour OR whole_minute FROM tail)')}
        UNION ALL
        ${minutes('bucket = $5 AND $5 < $7 AND (SELECT whole_minute AND NOT whole_hour FROM tail)')}
      )
      SELECT GROUPING(g) AS is_total, g AS value, ${sums}, max(fresh) AS freshness_at
      FROM source GROUP BY GROUPING SETS ((g), ())
      ORDER BY GROUPING(g), g COLLATE "C" NULLS LAST`,
  };
}

/** The summary statement of each `group_by`, built once. */
const SUMMARY_STATEMENTS = Object.fromEntries(Object.keys(DIMENSIONS).map((d) => [d, summaryStatement(d as Dimension)])) as Record<Dimension, ReturnType<typeof summaryStatement>>;

/** The reads of the usage read model: summaries over both rollup levels and the raw events, gaps, and key spend. */
@Injectable()
export class UsageRollupsRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Every group value's totals over the window, ordered by value (UTF-8 bytes, null last), then the window's totals. */
  summary(workspaceId: string, groupBy: Dimension, r: SummaryRange): Promise<SummaryRow[]> {
    const { window, hours, minutes } = r;
    return namedQuery<SummaryRow>(this.dataSource, SUMMARY_STATEMENTS[groupBy], [
      workspaceId, hours.from, hours.to, minutes.from, minutes.to, window.from, window.to, r.minuteEnd, r.tailHour, r.hourEnd,
    ]);
  }

  /** Whether a recorded gap overlaps the window. */
  async gapInWindow(workspaceId: string, window: TimeWindow): Promise<boolean> {
    // hand-written: a named EXISTS on every summary read (prepared once per connection).
    const rows = await namedQuery<{ found: boolean }>(
      this.dataSource,
      { name: 'usage_gap_in_window', text: `SELECT EXISTS (SELECT 1 FROM usage_gaps WHERE workspace_id = $1 AND from_at < $3 AND to_at > $2) AS found` },
      [workspaceId, window.from, window.to],
    );
    return rows[0].found;
  }

  /** The spend of each of the workspace's `keyIds` with usage in the month starting at `month`, for the summary's budgets. */
  keySpend(workspaceId: string, keyIds: string[], month: Date): Promise<{ key_id: string; spent: string }[]> {
    // hand-written: a named read of the keys' months on every summary read.
    return namedQuery<{ key_id: string; spent: string }>(
      this.dataSource,
      {
        name: 'usage_budget_spend',
        text: `SELECT key_id, usd_micros::text AS spent FROM usage_key_months WHERE workspace_id = $1 AND key_id = ANY($2) AND month = $3`,
      },
      [workspaceId, keyIds, month],
    );
  }
}
