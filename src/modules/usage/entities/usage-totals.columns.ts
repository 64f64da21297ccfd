import { Column } from 'typeorm';

/** The totals and freshness every rollup row carries, at both levels (`usage_rollups`, `usage_minute_rollups`). */
export abstract class UsageTotals {
  @Column({ name: 'event_count', type: 'bigint' })
  eventCount: string;

  @Column({ name: 'llm_requests', type: 'bigint' })
  llmRequests: string;

  @Column({ name: 'unpriced_count', type: 'bigint' })
  unpricedCount: string;

  @Column({ name: 'usd_micros', type: 'bigint' })
  usdMicros: string;

  @Column({ name: 'tokens_in', type: 'bigint' })
  tokensIn: string;

  @Column({ name: 'tokens_out', type: 'bigint' })
  tokensOut: string;

  @Column({ name: 'tokens_cached', type: 'bigint' })
  tokensCached: string;

  @Column({ name: 'tokens_reasoning', type: 'bigint' })
  tokensReasoning: string;

  @Column({ name: 'tool_calls', type: 'bigint' })
  toolCalls: string;

  @Column({ name: 'partial_count', type: 'bigint' })
  partialCount: string;

  @Column({ name: 'failure_count', type: 'bigint' })
  failureCount: string;

  @Column({ name: 'last_ingested_at', type: 'timestamptz', precision: 3 })
  lastIngestedAt: Date;
}
