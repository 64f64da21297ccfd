import { Column, Entity, PrimaryColumn } from 'typeorm';

/** `usage_events`: A raw usage event, as projected from the gateway stream (partitioned by month of `occurred_at`). */
@Entity({ name: 'usage_events' })
export class UsageEvent {
  @PrimaryColumn({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @PrimaryColumn({ name: 'occurred_at', type: 'timestamptz', precision: 3 })
  occurredAt: Date;

  @PrimaryColumn({ name: 'event_id', type: 'text' })
  eventId: string;

  @Column({ name: 'ingested_at', type: 'timestamptz', precision: 3 })
  ingestedAt: Date;

  @Column({ name: 'kind', type: 'text' })
  kind: string;

  @Column({ name: 'key_id', type: 'text', nullable: true })
  keyId: string | null;

  @Column({ name: 'model', type: 'text', nullable: true })
  model: string | null;

  @Column({ name: 'provider', type: 'text', nullable: true })
  provider: string | null;

  @Column({ name: 'tool', type: 'text', nullable: true })
  tool: string | null;

  @Column({ name: 'pricing_known', type: 'boolean' })
  pricingKnown: boolean;

  @Column({ name: 'outcome', type: 'text' })
  outcome: string;

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
}
