import { jwtVerify, SignJWT } from 'jose';
import { randomUUID } from 'node:crypto';

export const SERVICE_TOKEN_MAX_LIFETIME_S = 300;
const encoder = new TextEncoder();

/** True when `token` is an HS256 service JWT from `iss` to `aud` that lives at most 300 s. */
export async function verifyServiceToken(token: string, secret: string, issuer: string, audience: string): Promise<boolean> {
  try {
    const { payload } = await jwtVerify(token, encoder.encode(secret), {
      algorithms: ['HS256'],
      issuer,
      audience,
      requiredClaims: ['iat', 'exp', 'jti'],
    });
    const lifetime = (payload.exp as number) - (payload.iat as number);
    return lifetime > 0 && lifetime <= SERVICE_TOKEN_MAX_LIFETIME_S && typeof payload.jti === 'string';
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
