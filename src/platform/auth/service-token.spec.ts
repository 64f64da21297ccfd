import { serviceClaimsAccepted, signServiceToken } from 'src/platform/auth/service-token';
import { decode } from 'jsonwebtoken';

describe('service token rules', () => {
  const now = 1_000_000;
  const claims = { iss: 'gateway', aud: 'control', iat: now, exp: now + 60, jti: 'j' };

  it('accepts one audience, a jti, a lifetime of at most 300 s and an iat at most 30 s ahead', () => {
    expect(serviceClaimsAccepted(claims, now)).toBe(true);
    expect(serviceClaimsAccepted({ ...claims, aud: ['control'], exp: now + 300 }, now)).toBe(true);
    expect(serviceClaimsAccepted({ ...claims, iat: now + 30, exp: now + 90 }, now)).toBe(true);
  });

  it('refuses two audiences, no jti or an empty one, a missing iat or exp, a lifetime over 300 s or of zero, and an iat over 30 s ahead', () => {
    for (const wrong of [
      { aud: ['control', 'gateway'] },
      { jti: undefined },
      { jti: '' },
      { iat: undefined },
      { exp: undefined },
      { exp: now + 301 },
      { exp: now },
      { iat: now + 31, exp: now + 91 },
    ]) {
      expect([wrong, serviceClaimsAccepted({ ...claims, ...wrong }, now)]).toEqual([wrong, false]);
    }
  });

  it('signs HS256 tokens that meet its own rules', async () => {
    const token = await signServiceToken('a-secret-of-at-least-32-characters!!', 'control', 'gateway', 120, { ws: 'ws_1' });
    const { header, payload } = decode(token, { complete: true })!;
    expect(header).toEqual({ alg: 'HS256', typ: 'JWT' });
    expect(payload).toMatchObject({ iss: 'control', aud: 'gateway', ws: 'ws_1', jti: expect.any(String) });
    expect(serviceClaimsAccepted(payload as object, Math.floor(Date.now() / 1000))).toBe(true);
  });
});
