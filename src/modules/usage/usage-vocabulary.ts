/** A usage event as the gateway writes it (CONTRACT.md 4.4), parsed. */
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

/** A window whose events were lost. */
export interface UsageGap {
  workspace_id: string;
  from: Date;
  to: Date;
}

export type UsageEntry = { event: UsageEvent } | { gap: UsageGap };

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

/**
 * A summary's `group_by`. Written out, in this order, because the published document's enum
 * (docs/openapi.json, from the DTO's type) lists the union in the order its members were first
 * seen by the compiler.
 */
export type Dimension = 'key' | 'kind' | 'tool' | 'model' | 'provider';
/** The rollup dimensions and the event column each groups on. */
export const DIMENSIONS = { kind: 'kind', key: 'key_id', model: 'model', provider: 'provider', tool: 'tool' } as const satisfies Record<Dimension, string>;
