import { sessionIdentity, sessionRememberedUntil } from 'src/platform/auth/session.strategy';

describe('session rules', () => {
  const issuer = 'https://id.example';
  const header = { alg: 'RS256', kid: 'k1' };
  const payload = { iss: issuer, sub: 'alice', exp: 2_000, email: 'alice@example.com' };

  it('names the identity of a token that meets every rule', () => {
    expect(sessionIdentity(header, payload, issuer, [])).toEqual({ issuer, subject: 'alice', email: 'alice@example.com' });
    expect(sessionIdentity(header, { ...payload, email: 7 }, issuer, [])).toEqual({ issuer, subject: 'alice', email: null });
  });

  it('refuses a missing kid, exp or sub, an empty sub and a non-numeric iat', () => {
    expect(sessionIdentity({ alg: 'RS256' }, payload, issuer, [])).toBeNull();
    expect(sessionIdentity(header, { ...payload, exp: undefined }, issuer, [])).toBeNull();
    expect(sessionIdentity(header, { ...payload, sub: undefined }, issuer, [])).toBeNull();
    expect(sessionIdentity(header, { ...payload, sub: '' }, issuer, [])).toBeNull();
    expect(sessionIdentity(header, { ...payload, iat: '1' as unknown as number }, issuer, [])).toBeNull();
  });

  it('refuses a sub or an e-mail that cannot be stored or hashed losslessly (a NUL, a lone surrogate)', () => {
    for (const bad of ['a\u0000b@example.com', 'a\ud800b@example.com', 'a\udc00@example.com']) {
      expect(sessionIdentity(header, { ...payload, email: bad }, issuer, [])).toBeNull();
      expect(sessionIdentity(header, { ...payload, sub: bad }, issuer, [])).toBeNull();
    }
    expect(sessionIdentity(header, { ...payload, email: 'a\ud83d\ude00@example.com' }, issuer, [])).toMatchObject({ email: 'a\ud83d\ude00@example.com' });
  });

  it('requires azp in the allow-list only when one is configured', () => {
    expect(sessionIdentity(header, payload, issuer, ['cli'])).toBeNull();
    expect(sessionIdentity(header, { ...payload, azp: 'web' }, issuer, ['cli'])).toBeNull();
    expect(sessionIdentity(header, { ...payload, azp: 'cli' }, issuer, ['cli'])).not.toBeNull();
  });

  it('remembers a session until exp plus the leeway, never past the staleness of the key set that vouched for it', () => {
    expect(sessionRememberedUntil(2_000, 10_000_000)).toBe(2_030_000);
    expect(sessionRememberedUntil(2_000, 1_500_000)).toBe(1_500_000);
    expect(sessionRememberedUntil(2_000, 0)).toBe(0);
  });
});
