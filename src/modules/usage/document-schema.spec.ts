import { ApiError } from 'src/common/http/errors';
import { assertConforms, schemaMismatch } from 'src/common/http/document-schema';
import { USAGE_SUMMARY_SCHEMA } from 'src/modules/usage/document-schema';

const totals = {
  event_count: 1n, llm_requests: 1n, unpriced_count: 0n, usd_micros: 2n ** 60n, tokens_in: 0n, tokens_out: 0n,
  tokens_cached: 0n, tokens_reasoning: 0n, tool_calls: 0n, partial_count: 0n, failure_count: 0n,
};
const summary = () => ({
  schema_version: 1,
  workspace_id: 'ws_1',
  window: { from: '2026-01-01T00:00:00.000Z', to: '2026-01-02T00:00:00.000Z' },
  group_by: 'kind',
  totals,
  groups: [{ value: 'llm', totals }, { value: null, totals }],
  budgets: [
    {
      key_id: 'key_1',
      period: { from: '2026-01-01T00:00:00.000Z', to: '2026-02-01T00:00:00.000Z' },
      cap_usd_micros: 10n,
      spent_usd_micros: 3n,
      remaining_usd_micros: 7n,
    },
  ],
  freshness_at: null,
  completeness: 'complete',
  next_cursor: null,
});

describe('usage summary schema', () => {
  it('accepts a well-formed summary', () => {
    expect(schemaMismatch(USAGE_SUMMARY_SCHEMA, summary())).toBeNull();
  });

  it.each([
    ['a negative counter', (d: any) => (d.totals = { ...totals, event_count: -1n }), '$.totals.event_count'],
    ['a float counter', (d: any) => (d.groups[0].totals = { ...totals, tokens_in: 1.5 }), '$.groups[0].totals.tokens_in'],
    ['a missing field', (d: any) => delete d.freshness_at, '$.freshness_at'],
    ['an extra field', (d: any) => (d.extra = 1), '$.extra'],
    ['an unknown completeness', (d: any) => (d.completeness = 'partial'), '$.completeness'],
    ['a non-UTC timestamp', (d: any) => (d.window.from = '2026-01-01T00:00:00+01:00'), '$.window.from'],
    ['a wrong schema version', (d: any) => (d.schema_version = 2), '$.schema_version'],
  ])('names the path of %s', (_name, corrupt, path) => {
    const doc = summary();
    corrupt(doc);
    expect(schemaMismatch(USAGE_SUMMARY_SCHEMA, doc)).toBe(path);
  });

  it('answers 503 Observe read model unavailable instead of a partial document', () => {
    const doc = { ...summary(), completeness: 'unknown' };
    expect(() => assertConforms(USAGE_SUMMARY_SCHEMA, doc)).toThrow(ApiError);
    try {
      assertConforms(USAGE_SUMMARY_SCHEMA, doc);
    } catch (error) {
      expect((error as ApiError).getStatus()).toBe(503);
      expect((error as ApiError).getResponse()).toEqual({ detail: 'Observe read model unavailable' });
    }
  });
});
