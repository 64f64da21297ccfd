import { Inject, Injectable } from '@nestjs/common';
import { createLocalJWKSet, errors, JSONWebKeySet, jwtVerify, JWTVerifyGetKey } from 'jose';
import { APP_CONFIG, AppConfig } from 'src/config/config';

/** Who a verified session names: the (issuer, sub) pair a user row is keyed by, and the e-mail to refresh. */
export interface Identity {
  issuer: string;
  subject: string;
  email: string | null;
}

export interface SessionClaims extends Identity {
  /** Epoch ms after which the token is no longer accepted (`exp` plus the leeway). */
  acceptedUntil: number;
}

/** Minimum time between two JWKS fetches caused by an unknown `kid`. */
const JWKS_REFETCH_COOLDOWN_MS = 30_000;
const CLOCK_LEEWAY_S = 30;

/**
 * Verifies operator session tokens: RS256 only, key by `kid` from the issuer's JWKS (cached for
 * the configured TTL; an unknown `kid` refetches at most once per cooldown), `iss` exact,
 * `exp`/`iss`/`sub` required, 30 s leeway, `azp` in the allow-list when one is configured.
 */
@Injectable()
export class SessionVerifier {
  private keySet?: { get: JWTVerifyGetKey; fetchedAt: number };
  private pending?: Promise<JWTVerifyGetKey>;
  private lastUnknownKidRefetch = 0;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  get configured(): boolean {
    return this.config.identityIssuer !== undefined;
  }

  /** The cached key set, fetched when missing or older than the TTL (concurrent callers share one fetch). */
  private async keys(force = false): Promise<JWTVerifyGetKey> {
    const fresh = this.keySet && Date.now() - this.keySet.fetchedAt < this.config.jwksTtlSeconds * 1000;
    if (fresh && !force) return this.keySet!.get;
    this.pending ??= this.fetchKeys().finally(() => (this.pending = undefined));
    return this.pending;
  }

  private async fetchKeys(): Promise<JWTVerifyGetKey> {
    const response = await fetch(`${this.config.identityIssuer}/.well-known/jwks.json`, { signal: AbortSignal.timeout(5000) });
    if (!response.ok) throw new Error(`JWKS answered ${response.status}`);
    const get = createLocalJWKSet((await response.json()) as JSONWebKeySet);
    this.keySet = { get, fetchedAt: Date.now() };
    return get;
  }

  /** Resolves the signing key; an unknown `kid` refetches the key set once per cooldown (key rotation). */
  private readonly resolveKey: JWTVerifyGetKey = async (header, token) => {
    try {
      return await (await this.keys())(header, token);
    } catch (error) {
      if (!(error instanceof errors.JWKSNoMatchingKey) || Date.now() - this.lastUnknownKidRefetch < JWKS_REFETCH_COOLDOWN_MS) throw error;
      this.lastUnknownKidRefetch = Date.now();
      return (await this.keys(true))(header, token);
    }
  };

  /** The verified claims, or null for any failure (the caller answers one message for all). */
  async verify(token: string): Promise<SessionClaims | null> {
    if (!this.config.identityIssuer) return null;
    try {
      const { payload, protectedHeader } = await jwtVerify(token, this.resolveKey, {
        algorithms: ['RS256'],
        issuer: this.config.identityIssuer,
        clockTolerance: CLOCK_LEEWAY_S,
        requiredClaims: ['exp', 'iss', 'sub'],
      });
      if (typeof protectedHeader.kid !== 'string' || typeof payload.sub !== 'string' || payload.sub.length === 0) return null;
      const parties = this.config.authorizedParties;
      if (parties.length > 0 && (typeof payload.azp !== 'string' || !parties.includes(payload.azp))) return null;
      const email = typeof payload.email === 'string' ? payload.email : null;
      return { issuer: this.config.identityIssuer, subject: payload.sub, email, acceptedUntil: ((payload.exp as number) + CLOCK_LEEWAY_S) * 1000 };
    } catch {
      return null;
    }
  }
}
