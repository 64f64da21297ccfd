import { createClient, RedisClientType } from 'redis';
import type { Redis } from 'src/database/redis.module';
import { randomBytes } from 'node:crypto';
import { PassOptions, PassResult, StreamName, StreamsService } from 'src/modules/streams/streams.service';
import { REDIS_URL } from 'test/support/database';
import { TestApp } from 'test/support/app';

/** Plays the gateway on the suite's streams: XADDs raw entries and drives consumption passes. */
export class GatewayStreams {
  /** The suite's Redis (commands issued before it is up wait in node-redis's offline queue), or the connection given. */
  readonly redis: Redis;

  constructor(
    private readonly t: TestApp,
    redis?: Redis,
  ) {
    if (redis) this.redis = redis;
    else {
      const client: RedisClientType = createClient({ url: REDIS_URL });
      void client.connect();
      this.redis = client;
    }
  }

  key(stream: StreamName): string {
    return `${this.t.config.redisPrefix}:${stream}`;
  }

  /** XADDs each entry (an object is sent as JSON, a string as is) with field `data`; returns the entry ids. */
  add(stream: StreamName, ...entries: (object | string)[]): Promise<string[]> {
    // Issued in the same tick, the XADDs go out as one pipeline.
    return Promise.all(entries.map((entry) => this.redis.xAdd(this.key(stream), '*', { data: typeof entry === 'string' ? entry : JSON.stringify(entry) })));
  }

  /** One consumption pass, as the consumer job runs it. */
  pass(stream: StreamName, options?: PassOptions): Promise<PassResult> {
    return this.t.app.get(StreamsService).pass(stream, options) as Promise<PassResult>;
  }

  /** Entries delivered to the `control` group and not yet acknowledged. */
  async pending(stream: StreamName): Promise<number> {
    return (await this.redis.xPending(this.key(stream), 'control')).pending;
  }

  close(): void {
    this.redis.destroy();
  }
}

export const uid = (prefix: string) => `${prefix}_${randomBytes(8).toString('hex')}`;

/** A complete receipt revision as the gateway writes it (CONTRACT.md 4.4). */
export function receiptRevision(workspaceId: string, overrides: Record<string, unknown> = {}) {
  return {
    workspace_id: workspaceId,
    receipt_id: uid('rcp'),
    invocation_id: uid('inv'),
    receipt_revision: 1,
    tool: 'github.create_issue',
    key_id: 'key_default',
    connection_id: 'conn_default',
    state: 'completed',
    decision: 'allow',
    dispatch_state: 'accepted',
    evidence_trust: 'gateway_observed',
    verification_state: 'not_required',
    verification_method: 'none',
    effect_claim: null,
    verification_evidence_trust: null,
    vendor_http_status: 201,
    upstream_id: 'gh-123',
    latency_ms: 84,
    usd_micros: 1200,
    attempt_count: 1,
    occurred_at: '2026-01-15T10:00:00.000Z',
    updated_at: '2026-01-15T10:00:01.000Z',
    idempotency_key: 'idem-1',
    request_id: 'req_1',
    policy_id: 'pol_1',
    policy_revision_id: 'rev_1',
    envelope: { routing: { candidates: [{ model: 'a', score: 0.7, weight: 2 }] } },
    ...overrides,
  };
}

/** A usage event as the gateway writes it (CONTRACT.md 4.4). */
export function usageEvent(workspaceId: string, overrides: Record<string, unknown> = {}) {
  return {
    event_id: uid('evt'),
    workspace_id: workspaceId,
    kind: 'llm',
    key_id: 'key_default',
    model: 'gpt-x',
    provider: 'openai',
    tool: null,
    pricing_status: 'known',
    usd_micros: 100,
    tokens_in: 10,
    tokens_out: 20,
    tokens_cached: 1,
    tokens_reasoning: 2,
    outcome: 'ok',
    occurred_at: '2026-01-15T10:30:00.000Z',
    ...overrides,
  };
}
