import { EntityManager } from 'typeorm';
import { recordKeyUse } from 'src/modules/keys/dto/key.document';
import { arrayLiteral } from 'src/modules/streams/array-literal';
import { EntryReader, MalformedEntry } from 'src/modules/streams/entry-reader';
import { ParkedEntry, ParsedEntry, StreamProjector } from 'src/modules/streams/streams.service';
import { floorTo, HOUR_MS } from 'src/common/time/time';
import { deleteAtMost } from 'src/database/delete-at-most';

export interface UsageEvent {
  event_id: string;
  workspace_id: string;
  kind: 'llm' | 'tool';
  key_id: string | null;
  model: string | null;
  provider: string | null;
  tool: string | null;
  pricing_known: boolean;
  outcome: 'ok' | 'partial' | 'failure';
  /** int64 values travel as decimal strings. */
  usd_micros: string;
  tokens_in: string;
  tokens_out: string;
  tokens_cached: string;
  tokens_reasoning: string;
  occurred_at: Date;
}

export interface UsageGap {
  workspace_id: string;
  from: Date;
  to: Date;
}

export type UsageEntry = { event: UsageEvent } | { gap: UsageGap };

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

/** The totals of a set of events, as SQL aggregates over rows shaped like `usage_events`. */
export const EVENT_TOTALS = {
  event_count: `count(*)`,
  llm_requests: `count(*) FILTER (WHERE kind = 'llm')`,
  unpriced_count: `count(*) FILTER (WHERE NOT pricing_known)`,
  usd_micros: `COALESCE(sum(usd_micros) FILTER (WHERE pricing_known), 0)`,
  tokens_in: `sum(tokens_in)`,
  tokens_out: `sum(tokens_out)`,
  tokens_cached: `sum(tokens_cached)`,
  tokens_reasoning: `sum(tokens_reasoning)`,
  tool_calls: `count(*) FILTER (WHERE kind = 'tool')`,
  partial_count: `count(*) FILTER (WHERE outcome = 'partial')`,
  failure_count: `count(*) FILTER (WHERE outcome = 'failure')`,
} as const;
export type TotalsField = keyof typeof EVENT_TOTALS;
export const TOTALS_FIELDS = Object.keys(EVENT_TOTALS) as TotalsField[];

/** The rollup dimensions (a summary's `group_by`) and the event column each groups on. */
export const DIMENSIONS = { kind: 'kind', key: 'key_id', model: 'model', provider: 'provider', tool: 'tool' } as const;
export type Dimension = keyof typeof DIMENSIONS;

/** The event columns the rollups group on: one per dimension. */
const DIMENSION_COLUMNS = Object.values(DIMENSIONS).join(', ');

/** Adds each total of a rollup row (aliased `r`) to the row of its key. */
const ADD_TOTALS = `
    ${TOTALS_FIELDS.map((f) => `${f} = r.${f} + EXCLUDED.${f}`).join(', ')},
    last_ingested_at = GREATEST(r.last_ingested_at, EXCLUDED.last_ingested_at)`;

/**
 * Inserts the new events (a redelivered `event_id` is skipped), adds exactly the inserted ones to
 * the per-minute rollup (one row per minute and combination of the dimensions' values) and, from
 * those rows, to the hourly rollup of every dimension (both levels always hold the same events),
 * and moves each named key's `last_used_at` forward, in one statement.
 */
// hand-written: the stream projection and its rollups, one batched statement (single-row writes are fsync-bound; bench/read-models).
const PROJECT_EVENTS = `
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
  key_use AS (${recordKeyUse('inserted')})
  INSERT INTO usage_rollups AS r (workspace_id, dim, bucket, value, ${TOTALS_FIELDS.join(', ')}, last_ingested_at)
  SELECT workspace_id, d.dim, date_trunc('hour', bucket, 'UTC'), d.value, ${TOTALS_FIELDS.map((f) => `sum(${f})`).join(', ')}, max(last_ingested_at)
  FROM minutes
  CROSS JOIN LATERAL (VALUES ${Object.entries(DIMENSIONS).map(([dim, column]) => `('${dim}', ${column})`).join(', ')}) AS d(dim, value)
  GROUP BY 1, 2, 3, 4
  ORDER BY 1, 2, 3, 4
  ON CONFLICT (workspace_id, dim, bucket, value) DO UPDATE SET ${ADD_TOTALS}`;

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

async function insertGaps(manager: EntityManager, gaps: UsageGap[]): Promise<void> {
  if (gaps.length === 0) return;
  await manager.query(
    `INSERT INTO usage_gaps (workspace_id, from_at, to_at) SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::timestamptz[]) ON CONFLICT DO NOTHING`,
    [gaps.map((g) => g.workspace_id), gaps.map((g) => g.from), gaps.map((g) => g.to)],
  );
}

export const usageProjector: StreamProjector<UsageEntry> = {
  stream: 'usage',
  partitioned: 'usage_events',

  parse(reader) {
    const value = parseUsageEntry(reader);
    return 'gap' in value
      ? { workspaceId: value.gap.workspace_id, value, partitionTime: null }
      : { workspaceId: value.event.workspace_id, value, partitionTime: value.event.occurred_at };
  },

  async project(manager: EntityManager, entries: ParsedEntry<UsageEntry>[]) {
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
    if (events.length > 0) {
      // Times travel as ISO strings (a Date would be written in its local-time form).
      await manager.query(
        PROJECT_EVENTS,
        EVENT_COLUMNS.map(([name]) => arrayLiteral(events.map((e) => (name === 'occurred_at' ? e.occurred_at.toISOString() : e[name])))),
      );
    }
    await insertGaps(manager, gaps);
  },

  /** A lost event is a detectable gap: the hour its stream entry was written in. */
  async parked(manager: EntityManager, entries: ParkedEntry[]) {
    const gaps = entries
      .filter((e) => e.workspaceId !== null)
      .map((e) => {
        const from = floorTo(new Date(Number(e.id.split('-')[0])), HOUR_MS);
        return { workspace_id: e.workspaceId!, from, to: new Date(from.getTime() + HOUR_MS) };
      });
    await insertGaps(manager, gaps);
  },

  /**
   * Rollups of both levels and gap markers older than the cutoff, at most `limit` rollup rows in
   * all; raw events go with their partitions.
   */
  async retain(manager: EntityManager, workspaceId: string, cutoff: Date, limit: number) {
    let deleted = await deleteAtMost(manager, 'usage_rollups', 'workspace_id = $1 AND bucket < $2 AND dim = ANY($3)', [workspaceId, cutoff, Object.keys(DIMENSIONS)], limit);
    if (deleted < limit) deleted += await deleteAtMost(manager, 'usage_minute_rollups', 'workspace_id = $1 AND bucket < $2', [workspaceId, cutoff], limit - deleted);
    await manager.query(`DELETE FROM usage_gaps WHERE workspace_id = $1 AND to_at < $2`, [workspaceId, cutoff]);
    return deleted;
  },
};
