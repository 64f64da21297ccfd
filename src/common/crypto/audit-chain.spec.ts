import { createHash } from 'node:crypto';
import { canonicalJson } from 'src/common/crypto/crypto';
import { canonicalParts, ChainedRow, formatChainTime, GENESIS_HASH, linkHash } from 'src/common/crypto/audit-chain';

describe('audit chain', () => {
  const row: ChainedRow = {
    workspace_id: 'ws_1',
    seq: 12,
    event_id: 'aud_1',
    actor: { user_id: 'usr_1', email: 'é"\\@x.io' },
    action: 'key.mint',
    target: null,
    detail: { scopes: ['llm'], agent_id: 'a\n', status: true, snapshot_version: 3 },
    occurred_at: '2026-01-02T03:04:05.678000Z',
  };

  it('splits the canonical JSON around occurred_at and seq, the values the database supplies', () => {
    const parts = canonicalParts(row);
    expect(`${parts.before}${row.occurred_at}${parts.between}${row.seq}${parts.after}`).toBe(canonicalJson(row));
  });

  it('links with SHA-256 over the previous link as raw bytes and the canonical JSON as UTF-8', () => {
    const expected = createHash('sha256').update(Buffer.alloc(32)).update(Buffer.from(canonicalJson(row), 'utf8')).digest('hex');
    expect(linkHash(GENESIS_HASH, row)).toBe(expected);
    expect(canonicalJson(row)).toBe(
      '{"action":"key.mint","actor":{"email":"é\\"\\\\@x.io","user_id":"usr_1"},"detail":{"agent_id":"a\\n","scopes":["llm"],"snapshot_version":3,"status":true},"event_id":"aud_1","occurred_at":"2026-01-02T03:04:05.678000Z","seq":12,"target":null,"workspace_id":"ws_1"}',
    );
  });

  it('writes occurred_at with six fractional digits', () => {
    expect(formatChainTime(new Date('2026-01-02T03:04:05.678Z'))).toBe('2026-01-02T03:04:05.678000Z');
  });
});
