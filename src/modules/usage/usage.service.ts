import { Injectable, OnModuleInit } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { queryError } from 'src/common/http/errors';
import { decodeCursor, encodeCursor } from 'src/common/pagination/cursor';
import { ceilTo, floorTo, formatTime, formatTimeRequired, HOUR_MS, MINUTE_MS, TimeWindow } from 'src/common/time/time';
import { namedQuery } from 'src/database/named-query';
import { KeysService } from 'src/modules/keys/keys.service';
import { monthStart, StreamsService } from 'src/modules/streams/streams.service';
import { assertConforms } from 'src/common/http/document-schema';
import { USAGE_SUMMARY_SCHEMA } from 'src/modules/usage/document-schema';
import { Dimension, DIMENSIONS, EVENT_TOTALS, TOTALS_FIELDS, TotalsField, UsageEntry, usageProjector } from 'src/modules/usage/usage.projector';
import { OutboxService } from 'src/modules/notifications/outbox.service';
import { ParsedEntry } from 'src/modules/streams/streams.service';
import { Tx } from 'src/database/transaction';

/** The shares of a key's monthly cap that emit `budget.threshold_crossed` (CONTRACT.md section 7). */
export const BUDGET_THRESHOLDS = [50, 80, 100] as const;

export interface UsageQuery {
  window: TimeWindow;
  groupBy: Dimension;
  limit: number;
  cursor?: string;
}

type Totals = Record<TotalsField, bigint>;
type SummaryRow = Record<TotalsField, string | null> & { is_total: number; value: string | null; freshness_at: Date | null };

const CURSOR = { group_by: 'string', after: 'string' } as const;
/** Group order: values by UTF-8 bytes (SQL `COLLATE "C"`), null last. */
const after = (value: string | null, bound: string) => value === null || Buffer.compare(Buffer.from(value), Buffer.from(bound)) > 0;

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
// hand-written: a named statement over both rollup levels and the partitioned raw events (a raw 30-day aggregate takes ~750 ms).
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

/**
 * How a window splits over the levels: whole hours [hours.from, hours.to), whole minutes
 * [minutes.from, hours.from) and [hours.to, minutes.to), raw events [from, minutes.from) and
 * [minutes.to, to), each edge remainder shorter than a minute. A range holding no whole bucket
 * is empty (from = to); the hour range sits at floor_hour(to) whenever the window reaches back to
 * that hour's start (then [hours.to, to) is the window's part of that hour: `tailHour`).
 */
export function splitWindow({ from, to }: TimeWindow) {
  const minutes = ceilTo(from, MINUTE_MS) <= floorTo(to, MINUTE_MS) ? { from: ceilTo(from, MINUTE_MS), to: floorTo(to, MINUTE_MS) } : { from: to, to };
  const holdsHourStart = ceilTo(from, HOUR_MS) <= floorTo(to, HOUR_MS);
  const hours = holdsHourStart ? { from: ceilTo(from, HOUR_MS), to: floorTo(to, HOUR_MS) } : { from: minutes.to, to: minutes.to };
  return { hours, minutes, tailHour: holdsHourStart && to.getTime() % HOUR_MS !== 0 };
}

function toTotals(row: SummaryRow | undefined): Totals {
  return Object.fromEntries(TOTALS_FIELDS.map((f) => [f, BigInt(row?.[f] ?? 0)])) as Totals;
}

@Injectable()
export class UsageService implements OnModuleInit {
  constructor(
    private readonly dataSource: DataSource,
    private readonly streams: StreamsService,
    private readonly keys: KeysService,
    private readonly outbox: OutboxService,
  ) {}

  onModuleInit(): void {
    this.streams.register({
      ...usageProjector,
      project: async (manager, entries, tx) => {
        await usageProjector.project(manager, entries, tx);
        if (tx) await this.budgetThresholds(tx, entries);
      },
    });
  }

  /**
   * `budget.threshold_crossed` for every capped key of the batch whose spend in the current UTC
   * month has reached 50, 80 or 100% of its cap, in the projection's transaction. Level-triggered
   * (the spend after this batch, whatever batches committed beside it), and exactly once per key,
   * threshold and month through the outbox's dedupe key: two replicas or a redelivered entry
   * emit nothing twice, and a crossing no single batch saw alone is still emitted by the next.
   */
  private async budgetThresholds(tx: Tx, entries: ParsedEntry<UsageEntry>[]): Promise<void> {
    const now = new Date();
    const period = { from: monthStart(now), to: monthStart(now, 1) };
    const keys = new Map<string, [string, string]>();
    for (const { value } of entries) {
      if ('event' in value && value.event.key_id && value.event.pricing_known && value.event.occurred_at >= period.from && value.event.occurred_at < period.to) {
        keys.set(`${value.event.workspace_id}/${value.event.key_id}`, [value.event.workspace_id, value.event.key_id]);
      }
    }
    if (keys.size === 0) return;
    const list = [...keys.values()];
    const from = formatTimeRequired(period.from);
    // hand-written: on the ingestion path, one set-based statement per batch: the capped keys of the
    // batch (nothing else is read when none is capped), their month's spend from the hourly rollups
    // (one index range per workspace, not one per key: the index leads with the bucket, not the key),
    // and the thresholds crossed whose message is not written yet (the emit's dedupe key still
    // decides, so a concurrent batch emits nothing twice).
    const rows: { workspace_id: string; key_id: string; agent_id: string; cap: string; spent: string; threshold: number }[] = await tx.manager.query(
      `WITH capped AS MATERIALIZED (
         SELECT k.workspace_id, k.id, k.agent_id, k.budget_micros_usd_month::numeric AS cap
         FROM unnest($1::text[], $2::text[]) AS b(workspace_id, key_id)
         JOIN virtual_keys k ON k.workspace_id = b.workspace_id AND k.id = b.key_id AND k.budget_micros_usd_month > 0
       ), rollups AS (
         SELECT r.workspace_id, r.value, sum(r.usd_micros) AS spent FROM usage_rollups r
         WHERE r.workspace_id = ANY(ARRAY(SELECT DISTINCT workspace_id FROM capped)) AND r.dim = 'key' AND r.bucket >= $3 AND r.bucket < $4
           AND r.value = ANY(ARRAY(SELECT id FROM capped))
         GROUP BY 1, 2
       ), spend AS (
         SELECT c.workspace_id, c.id, c.agent_id, c.cap, COALESCE(r.spent, 0) AS spent
         FROM capped c LEFT JOIN rollups r ON r.workspace_id = c.workspace_id AND r.value = c.id
       )
       SELECT s.workspace_id, s.id AS key_id, s.agent_id, s.cap::text AS cap, s.spent::text AS spent, t.threshold
       FROM spend s CROSS JOIN unnest($5::int[]) AS t(threshold)
       WHERE s.spent * 100 >= s.cap * t.threshold
         AND NOT EXISTS (SELECT 1 FROM notification_messages m WHERE m.workspace_id = s.workspace_id AND m.dedupe_key = 'budget:' || s.id || ':' || t.threshold || ':' || $6)
       ORDER BY s.workspace_id, s.id, t.threshold`,
      [list.map(([w]) => w), list.map(([, k]) => k), period.from, period.to, BUDGET_THRESHOLDS, from],
    );
    for (const row of rows) {
      await this.outbox.emit(
        tx,
        row.workspace_id,
        'budget.threshold_crossed',
        {
          key_id: row.key_id,
          agent_id: row.agent_id,
          threshold_percent: row.threshold,
          cap_usd_micros: BigInt(row.cap),
          spent_usd_micros: BigInt(row.spent),
          period: { from, to: formatTimeRequired(period.to) },
        },
        { dedupeKey: `budget:${row.key_id}:${row.threshold}:${from}` },
      );
    }
  }

  async summary(workspaceId: string, q: UsageQuery, now = new Date()) {
    let bound: string | null = null;
    if (q.cursor !== undefined) {
      const cursor = decodeCursor(CURSOR, `usage:${workspaceId}`, q.cursor);
      if (!cursor || cursor.group_by !== q.groupBy) throw queryError('cursor', 'invalid cursor');
      bound = cursor.after;
    }
    const { from, to } = q.window;
    const { hours, minutes, tailHour } = splitWindow(q.window);
    const rows = await namedQuery<SummaryRow>(this.dataSource, SUMMARY_STATEMENTS[q.groupBy], [
      workspaceId, hours.from, hours.to, minutes.from, minutes.to, from, to, ceilTo(to, MINUTE_MS), tailHour, ceilTo(to, HOUR_MS),
    ]);
    const total = rows.find((r) => r.is_total === 1);
    const remaining = rows.filter((r) => r.is_total === 0 && (bound === null || after(r.value, bound)));
    const page = remaining.slice(0, q.limit);
    const last = page[page.length - 1];
    const [gaps, budgets] = await Promise.all([this.gapDetected(workspaceId, q.window), this.budgets(workspaceId, now)]);
    return assertConforms(USAGE_SUMMARY_SCHEMA, {
      schema_version: 1,
      workspace_id: workspaceId,
      window: { from: formatTimeRequired(from), to: formatTimeRequired(to) },
      group_by: q.groupBy,
      totals: toTotals(total),
      groups: page.map((r) => ({ value: r.value, totals: toTotals(r) })),
      budgets,
      freshness_at: formatTime(total?.freshness_at),
      completeness: gaps ? 'gap_detected' : 'complete',
      next_cursor:
        remaining.length > q.limit && last && last.value !== null ? encodeCursor(CURSOR, `usage:${workspaceId}`, { group_by: q.groupBy, after: last.value }) : null,
    });
  }

  private async gapDetected(workspaceId: string, window: TimeWindow): Promise<boolean> {
    const rows = await namedQuery<{ found: boolean }>(
      this.dataSource,
      { name: 'usage_gap_in_window', text: `SELECT EXISTS (SELECT 1 FROM usage_gaps WHERE workspace_id = $1 AND from_at < $3 AND to_at > $2) AS found` },
      [workspaceId, window.from, window.to],
    );
    return rows[0].found;
  }

  /** Each unrevoked key with a monthly cap (the keys module's list): the current UTC calendar month's spend from the usage rollups. */
  private async budgets(workspaceId: string, now: Date) {
    const period = { from: monthStart(now), to: monthStart(now, 1) };
    const caps = await this.keys.budgetCaps(workspaceId);
    if (caps.length === 0) return [];
    const spent = await namedQuery<{ key_id: string; spent: string }>(
      this.dataSource,
      {
        name: 'usage_budget_spend',
        text: `SELECT value AS key_id, sum(usd_micros)::text AS spent FROM usage_rollups
               WHERE workspace_id = $1 AND dim = 'key' AND value = ANY($2) AND bucket >= $3 AND bucket < $4 GROUP BY value`,
      },
      [workspaceId, caps.map((c) => c.id), period.from, period.to],
    );
    const spentBy = new Map(spent.map((r) => [r.key_id, r.spent]));
    const rows = caps.map((c) => ({ key_id: c.id, cap: c.cap, spent: spentBy.get(c.id) ?? '0' }));
    return rows.map((r) => {
      const cap = BigInt(r.cap);
      const spent = BigInt(r.spent);
      return {
        key_id: r.key_id,
        period: { from: formatTimeRequired(period.from), to: formatTimeRequired(period.to) },
        cap_usd_micros: cap,
        spent_usd_micros: spent,
        remaining_usd_micros: cap > spent ? cap - spent : 0n,
      };
    });
  }
}
