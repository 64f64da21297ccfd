import { sanitizeAuditDetail } from 'src/modules/audit/audit-vocabulary';

describe('audit detail sanitizer', () => {
  it('keeps allowed keys with allowed values and drops everything else', () => {
    expect(
      sanitizeAuditDetail({
        agent_id: 'agent-1',
        last4: 'abcd',
        scopes: ['mcp', 'llm'],
        status: true,
        snapshot_version: 42,
        plaintext: 'ob_live_secret',
        secret: 'x',
        reason: 'r'.repeat(257),
        key_id: { nested: 1 },
        policy_id: 1.5,
        source: ['a'.repeat(257)],
        tier: Array.from({ length: 17 }, () => 't'),
        env: null,
      }),
    ).toEqual({ agent_id: 'agent-1', last4: 'abcd', scopes: ['mcp', 'llm'], status: true, snapshot_version: 42 });
  });

  it('keeps at most 16 keys', () => {
    const keys = ['agent_id', 'bundle_hash', 'connection_id', 'env', 'key_id', 'last4', 'policy_id', 'prefix', 'provider_id', 'publication_state', 'qualifier_id', 'reason', 'revision_id', 'scopes', 'snapshot_version', 'source', 'status', 'tier', 'tools_mode'];
    expect(Object.keys(sanitizeAuditDetail(Object.fromEntries(keys.map((k) => [k, 'v']))))).toHaveLength(16);
  });

  it('keeps strings of exactly 256 characters and lists of exactly 16', () => {
    const detail = sanitizeAuditDetail({ reason: 'r'.repeat(256), source: Array.from({ length: 16 }, () => 's') });
    expect(detail.reason).toHaveLength(256);
    expect(detail.source).toHaveLength(16);
  });

  it('accepts int64 values it can represent exactly and refuses the rest', () => {
    expect(sanitizeAuditDetail({ snapshot_version: 2 ** 53 - 1 })).toEqual({ snapshot_version: 2 ** 53 - 1 });
    expect(sanitizeAuditDetail({ snapshot_version: 2 ** 63 })).toEqual({});
    expect(sanitizeAuditDetail({ snapshot_version: 12n })).toEqual({ snapshot_version: 12 });
  });
});
