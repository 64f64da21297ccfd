import { Injectable, OnModuleInit } from '@nestjs/common';
import { queryError } from 'src/common/http/errors';
import { decodeCursor, encodeCursor } from 'src/common/pagination/cursor';
import { ceilTo, floorTo, formatTime, formatTimeRequired, HOUR_MS, MINUTE_MS, TimeWindow } from 'src/common/time/time';
import { KeysService } from 'src/modules/keys/keys.service';
import { monthStart } from 'src/modules/streams/stream-projector';
import { StreamsService } from 'src/modules/streams/streams.service';
import { assertConforms } from 'src/common/http/document-schema';
import { BudgetThresholds } from 'src/modules/usage/budget-thresholds';
import { USAGE_SUMMARY_SCHEMA } from 'src/modules/usage/document-schema';
import { SummaryRow, UsageRollupsRepository } from 'src/modules/usage/usage-rollups.repository';
import { UsageProjector } from 'src/modules/usage/usage.projector';
import { UsageEventsRepository } from 'src/modules/usage/usage-events.repository';
import { Transactions } from 'src/database/transactions';
import { Dimension, TOTALS_FIELDS, TotalsField, UsageEntry } from 'src/modules/usage/usage-vocabulary';

export { BUDGET_THRESHOLDS } from 'src/modules/usage/budget-thresholds';

export interface UsageQuery {
  window: TimeWindow;
  groupBy: Dimension;
  limit: number;
  cursor?: string;
}

type Totals = Record<TotalsField, bigint>;

const CURSOR = { group_by: 'string', after: 'string' } as const;
/** Group order: values by UTF-8 bytes (SQL `COLLATE "C"`), null last. */
const after = (value: string | null, bound: string) => value === null || Buffer.compare(Buffer.from(value), Buffer.from(bound)) > 0;

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
    private readonly rollups: UsageRollupsRepository,
    private readonly projector: UsageProjector,
    private readonly budgetThresholds: BudgetThresholds,
    private readonly streams: StreamsService,
    private readonly keys: KeysService,
    private readonly events: UsageEventsRepository,
    private readonly transactions: Transactions,
  ) {}

  /**
   * Each key's spend in the UTC month starting at `month`, summed again from the hourly rollups
   * (`usage:key-months`, docs/runbook.md): after a rolling deploy that let replicas of the code
   * before `usage_key_months` ingest. The number of key months written.
   */
  resumKeyMonth(month: Date): Promise<number> {
    return this.transactions.run((tx) => this.events.resumKeyMonth(tx.manager, month, monthStart(month, 1)));
  }

  onModuleInit(): void {
    const projector = this.projector;
    this.streams.register<UsageEntry>({
      stream: projector.stream,
      partitioned: projector.partitioned,
      parse: (reader) => projector.parse(reader),
      parked: (manager, entries) => projector.parked(manager, entries),
      retain: (manager, workspaceId, cutoff, limit) => projector.retain(manager, workspaceId, cutoff, limit),
      project: async (manager, entries, tx) => {
        if (!tx) return projector.project(manager, entries);
        const budget = this.budgetThresholds.current();
        await this.budgetThresholds.emit(tx, budget, await projector.projectWithBudget(manager, entries, budget));
      },
    });
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
    const rows = await this.rollups.summary(workspaceId, q.groupBy, {
      window: q.window, hours, minutes, minuteEnd: ceilTo(to, MINUTE_MS), tailHour, hourEnd: ceilTo(to, HOUR_MS),
    });
    const total = rows.find((r) => r.is_total === 1);
    const remaining = rows.filter((r) => r.is_total === 0 && (bound === null || after(r.value, bound)));
    const page = remaining.slice(0, q.limit);
    const last = page[page.length - 1];
    const [gaps, budgets] = await Promise.all([this.rollups.gapInWindow(workspaceId, q.window), this.budgets(workspaceId, now)]);
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

  /** Each unrevoked key with a monthly cap (the keys module's list): the current UTC calendar month's spend from the keys' months (`usage_key_months`). */
  private async budgets(workspaceId: string, now: Date) {
    const period = { from: monthStart(now), to: monthStart(now, 1) };
    const caps = await this.keys.budgetCaps(workspaceId);
    if (caps.length === 0) return [];
    const spent = await this.rollups.keySpend(workspaceId, caps.map((c) => c.id), period.from);
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
