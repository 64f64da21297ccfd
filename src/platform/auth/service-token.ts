import { JwtPayload, sign } from 'jsonwebtoken';
import { randomUUID } from 'node:crypto';

export const SERVICE_TOKEN_MAX_LIFETIME_S = 300;
/** How far in the future `iat` may lie (the peer's clock running ahead). */
export const SERVICE_TOKEN_IAT_SKEW_S = 30;

/**
 * The rules a service JWT must meet beyond its HS256 signature, `iss` and `aud` (checked by
 * jsonwebtoken): exactly one audience, a string `jti`, issued no later than now (plus a small
 * skew) and living at most 300 s (`exp - iat`). So a token never outlives now + 330 s, and a
 * token for one direction is never valid for the other.
 */
export function serviceClaimsAccepted(payload: JwtPayload, nowS: number): boolean {
  const { exp, iat, jti, aud } = payload;
  if (typeof exp !== 'number' || typeof iat !== 'number') return false;
  const lifetime = exp - iat;
  const audiences = Array.isArray(aud) ? aud : [aud];
  return (
    lifetime > 0 &&
    lifetime <= SERVICE_TOKEN_MAX_LIFETIME_S &&
    iat <= nowS + SERVICE_TOKEN_IAT_SKEW_S &&
    audiences.length === 1 &&
    typeof jti === 'string' &&
    jti.length > 0
  );
}

/** Signs a service JWT (control to gateway, or the gateway side in tests). */
export function signServiceToken(secret: string, issuer: string, audience: string, lifetimeS = 60, claims: Record<string, unknown> = {}): Promise<string> {
  return new Promise((resolve, reject) =>
    sign(claims, secret, { algorithm: 'HS256', issuer, audience, expiresIn: lifetimeS, jwtid: randomUUID() }, (error, token) => (error ? reject(error) : resolve(token!))),
  );
}
