import { keyStatus } from 'src/modules/keys/dto/key.document';
import { newSecret, SECRET_BYTES } from 'src/modules/keys/keys.service';

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
