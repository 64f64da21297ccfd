import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { floorTo, HOUR_MS } from 'src/common/time/time';
import { EntryReader, MalformedEntry } from 'src/modules/streams/entry-reader';
import { ParkedEntry, ParsedEntry, StreamProjector } from 'src/modules/streams/stream-projector';
import { BudgetCrossing, BudgetQuery, UsageEventsRepository } from 'src/modules/usage/usage-events.repository';
import { UsageEntry, UsageEvent, UsageGap } from 'src/modules/usage/usage-vocabulary';

export { DIMENSIONS, EVENT_TOTALS, TOTALS_FIELDS } from 'src/modules/usage/usage-vocabulary';
export type { Dimension, TotalsField, UsageEntry, UsageEvent, UsageGap } from 'src/modules/usage/usage-vocabulary';

/** Reads a usage event or a gap marker of `{prefix}:usage` (CONTRACT.md 4.4). */
export function parseUsageEntry(r: EntryReader): UsageEntry {
  const workspace_id = r.string('workspace_id', 64);
  if (r.has('kind') && r.oneOf('kind', ['llm', 'tool', 'gap']) === 'gap') {
    const from = r.time('from');
    const to = r.time('to');
    if (from.getTime() >= to.getTime()) throw new MalformedEntry('gap from must be before to');
    return { gap: { workspace_id, from, to } };
  }
  const pricingKnown = r.oneOf('pricing_status', ['known', 'unknown']) === 'known';
  return {
    event: {
      event_id: r.string('event_id', 128),
      workspace_id,
      kind: r.oneOf('kind', ['llm', 'tool']),
      key_id: r.optionalString('key_id', 64),
      model: r.optionalString('model'),
      provider: r.optionalString('provider', 128),
      tool: r.optionalString('tool'),
      pricing_known: pricingKnown,
      outcome: r.oneOf('outcome', ['ok', 'partial', 'failure']),
      usd_micros: pricingKnown ? r.bigint('usd_micros') : (r.optionalBigint('usd_micros') ?? '0'),
      tokens_in: r.optionalBigint('tokens_in') ?? '0',
      tokens_out: r.optionalBigint('tokens_out') ?? '0',
      tokens_cached: r.optionalBigint('tokens_cached') ?? '0',
      tokens_reasoning: r.optionalBigint('tokens_reasoning') ?? '0',
      occurred_at: r.time('occurred_at'),
    },
  };
}

/** The usage read model's part of the stream consumer: parses events and gap markers and projects them through UsageEventsRepository. */
@Injectable()
export class UsageProjector implements StreamProjector<UsageEntry> {
  readonly stream = 'usage';
  readonly partitioned = 'usage_events';

  constructor(private readonly events: UsageEventsRepository) {}

  parse(reader: EntryReader) {
    const value = parseUsageEntry(reader);
    return 'gap' in value
      ? { workspaceId: value.gap.workspace_id, value, partitionTime: null }
      : { workspaceId: value.event.workspace_id, value, partitionTime: value.event.occurred_at };
  }

  async project(manager: EntityManager, entries: ParsedEntry<UsageEntry>[]): Promise<void> {
    await this.write(manager, entries);
  }

  /** Projects the batch and answers the budget thresholds its capped keys crossed (UsageEventsRepository, BudgetThresholds). */
  projectWithBudget(manager: EntityManager, entries: ParsedEntry<UsageEntry>[], budget: BudgetQuery): Promise<BudgetCrossing[]> {
    return this.write(manager, entries, budget);
  }

  private async write(manager: EntityManager, entries: ParsedEntry<UsageEntry>[], budget?: BudgetQuery): Promise<BudgetCrossing[]> {
    const seen = new Set<string>();
    const events: UsageEvent[] = [];
    const gaps: UsageGap[] = [];
    for (const { value } of entries) {
      if ('gap' in value) gaps.push(value.gap);
      else if (!seen.has(`${value.event.workspace_id}/${value.event.event_id}`)) {
        seen.add(`${value.event.workspace_id}/${value.event.event_id}`);
        events.push(value.event);
      }
    }
    const crossings = await this.events.projectEvents(manager, events, budget);
    await this.events.insertGaps(manager, gaps);
    return crossings;
  }

  /** A lost event is a detectable gap: the hour its stream entry was written in. */
  async parked(manager: EntityManager, entries: ParkedEntry[]): Promise<void> {
    const gaps = entries
      .filter((e) => e.workspaceId !== null)
      .map((e) => {
        const from = floorTo(new Date(Number(e.id.split('-')[0])), HOUR_MS);
        return { workspace_id: e.workspaceId!, from, to: new Date(from.getTime() + HOUR_MS) };
      });
    await this.events.insertGaps(manager, gaps);
  }

  /**
   * Rollups of both levels and gap markers older than the cutoff, at most `limit` rollup rows in
   * all; raw events go with their partitions.
   */
  retain(manager: EntityManager, workspaceId: string, cutoff: Date, limit: number): Promise<number> {
    return this.events.retain(manager, workspaceId, cutoff, limit);
  }
}
