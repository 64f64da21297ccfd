import { jwtVerify, SignJWT } from 'jose';
import { randomUUID } from 'node:crypto';

export const SERVICE_TOKEN_MAX_LIFETIME_S = 300;
/** How far in the future `iat` may lie (the peer's clock running ahead). */
export const SERVICE_TOKEN_IAT_SKEW_S = 30;
const encoder = new TextEncoder();

/**
 * True when `token` is an HS256 service JWT from `iss` to exactly one `aud`, with a string `jti`,
 * issued no later than now (plus a small skew) and living at most 300 s (`exp - iat`). So a
 * token never outlives now + 330 s, and a token for one direction is never valid for the other.
 */
export async function verifyServiceToken(token: string, secret: string, issuer: string, audience: string): Promise<boolean> {
  try {
    const { payload } = await jwtVerify(token, encoder.encode(secret), {
      algorithms: ['HS256'],
      issuer,
      audience,
      requiredClaims: ['iat', 'exp', 'jti'],
    });
    const exp = payload.exp as number;
    const iat = payload.iat as number;
    const lifetime = exp - iat;
    const audiences = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
    return (
      lifetime > 0 &&
      lifetime <= SERVICE_TOKEN_MAX_LIFETIME_S &&
      iat <= Math.floor(Date.now() / 1000) + SERVICE_TOKEN_IAT_SKEW_S &&
      audiences.length === 1 &&
      typeof payload.jti === 'string' &&
      payload.jti.length > 0
    );
  } catch {
    return false;
  }
}

/** Signs a service JWT (control to gateway, or the gateway side in tests). */
export function signServiceToken(secret: string, issuer: string, audience: string, lifetimeS = 60, claims: Record<string, unknown> = {}): Promise<string> {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(issuer)
    .setAudience(audience)
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + lifetimeS)
    .setJti(randomUUID())
    .sign(encoder.encode(secret));
}
