import { KeyDocumentRow, keyStatus, toKeyContext, toKeyDocument } from 'src/modules/keys/dto/key.document';
import { lapsed, newSecret, SECRET_BYTES } from 'src/modules/keys/keys.service';

describe('keyStatus', () => {
  const now = new Date('2030-01-01T00:00:00.000Z');
  const before = new Date(now.getTime() - 1);
  const after = new Date(now.getTime() + 1);

  it('is active without revocation and before expiry', () => {
    expect(keyStatus({ revoked_at: null, expires_at: null }, now)).toBe('active');
    expect(keyStatus({ revoked_at: null, expires_at: after }, now)).toBe('active');
  });

  it('is expired from expires_at on', () => {
    expect(keyStatus({ revoked_at: null, expires_at: now }, now)).toBe('expired');
    expect(keyStatus({ revoked_at: null, expires_at: before }, now)).toBe('expired');
  });

  it('is revoked whenever revoked, even past expiry', () => {
    expect(keyStatus({ revoked_at: before, expires_at: null }, now)).toBe('revoked');
    expect(keyStatus({ revoked_at: before, expires_at: before }, now)).toBe('revoked');
  });
});

describe('newSecret', () => {
  it('is the prefix, an underscore and 32 random bytes in header-safe base64url', () => {
    const secret = newSecret('ob_live');
    expect(secret).toMatch(/^ob_live_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(secret.slice('ob_live_'.length), 'base64url')).toHaveLength(SECRET_BYTES);
    expect(newSecret('ob_live')).not.toBe(secret);
  });
});

describe('toKeyDocument', () => {
  const DAY = 86_400_000;
  const now = new Date('2030-06-01T00:00:00.000Z');
  const row = (over: Partial<KeyDocumentRow> = {}): KeyDocumentRow => ({
    id: 'key_1', workspace_id: 'ws_1', agent_id: 'a', prefix: 'ob_test', key_hash: 'h'.repeat(64), last4: 'abcd',
    allowed_models: ['*'], allowed_tools: ['*'], tools_mode: 'full', budget_micros_usd_month: null, rpm: null, tpm: null,
    scopes: ['llm'], attributes: {}, expires_at: null, revoked_at: null, created_at: new Date(now.getTime() - 200 * DAY),
    previous_key_hash: null, previous_last4: null, previous_valid_until: null, rotated_at: null, last_used_at: null,
    ...over,
  });

  it('reads idle from the last use, or from creation for a key never used, from exactly idleDays on', () => {
    expect(toKeyDocument(row({ last_used_at: new Date(now.getTime() - 90 * DAY) }), now, 90).idle).toBe(true);
    expect(toKeyDocument(row({ last_used_at: new Date(now.getTime() - 90 * DAY + 1) }), now, 90).idle).toBe(false);
    expect(toKeyDocument(row(), now, 90).idle).toBe(true);
    expect(toKeyDocument(row({ created_at: new Date(now.getTime() - DAY) }), now, 90).idle).toBe(false);
  });

  it('shows the replaced secret as {last4, valid_until}, null before the first rotation, and never a digest', () => {
    expect(toKeyDocument(row(), now, 90).previous).toBeNull();
    const rotated = row({ previous_key_hash: 'p'.repeat(64), previous_last4: 'wxyz', previous_valid_until: now, rotated_at: now });
    const document = toKeyDocument(rotated, now, 90);
    expect(document).toMatchObject({ rotated_at: '2030-06-01T00:00:00.000Z', previous: { last4: 'wxyz', valid_until: '2030-06-01T00:00:00.000Z' } });
    expect(JSON.stringify(document)).not.toContain('p'.repeat(64));
    expect(JSON.stringify(document)).not.toContain('h'.repeat(64));
  });
});

describe('toKeyContext', () => {
  it('carries valid_until only for the replaced secret', () => {
    const base = {
      id: 'key_1', workspace_id: 'ws_1', env: 'dev' as const, agent_id: 'a', prefix: 'ob_test', key_hash: 'h'.repeat(64), last4: 'abcd',
      allowed_models: ['*'], allowed_tools: ['*'], tools_mode: 'full', budget_micros_usd_month: null, rpm: null, tpm: null, scopes: ['llm'],
      attributes: {}, expires_at: null, revoked_at: null, created_at: new Date(0), previous_key_hash: 'p'.repeat(64), previous_last4: 'wxyz',
      previous_valid_until: new Date('2030-01-01T00:00:00.000Z'), rotated_at: new Date(0),
    };
    const now = new Date('2029-01-01T00:00:00.000Z');
    expect(toKeyContext(base, now).valid_until).toBeNull();
    expect(toKeyContext({ ...base, previous: true }, now).valid_until).toBe('2030-01-01T00:00:00.000Z');
  });
});

describe('lapsed (a stored key context past its expiry or grace is not answered from the hot path)', () => {
  const now = Date.parse('2030-01-01T00:00:00.000Z');
  const context = (fields: Record<string, unknown>) =>
    JSON.stringify({ key_id: 'key_1', status: 'active', attributes: {}, expires_at: null, revoked_at: null, valid_until: null, ...fields });

  it('is false without expiry or grace, and before them', () => {
    expect(lapsed(context({}), now)).toBe(false);
    expect(lapsed(context({ expires_at: '2030-01-01T00:00:00.001Z', valid_until: '2030-01-01T00:00:00.001Z' }), now)).toBe(false);
  });

  it('is true from expires_at or valid_until on', () => {
    expect(lapsed(context({ expires_at: '2030-01-01T00:00:00.000Z' }), now)).toBe(true);
    expect(lapsed(context({ valid_until: '2029-12-31T23:59:59.999Z' }), now)).toBe(true);
  });

  it('cannot be fooled by a same-named field inside attributes: any past occurrence sends the lookup to PostgreSQL', () => {
    const forged = context({ attributes: { expires_at: '2999-01-01T00:00:00.000Z', valid_until: '2999-01-01T00:00:00.000Z' }, expires_at: '2029-01-01T00:00:00.000Z' });
    expect(lapsed(forged, now)).toBe(true);
    expect(lapsed(context({ attributes: { expires_at: '2000-01-01T00:00:00.000Z' } }), now)).toBe(true);
    expect(lapsed(context({ attributes: { note: '"expires_at":"2999-01-01T00:00:00.000Z"' }, expires_at: '2029-01-01T00:00:00.000Z' }), now)).toBe(true);
  });
});
