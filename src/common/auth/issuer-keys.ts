import { Inject, Injectable } from '@nestjs/common';
import { decode } from 'jsonwebtoken';
import { passportJwtSecret } from 'jwks-rsa';
import { SecretOrKeyProvider } from 'passport-jwt';
import { APP_CONFIG, AppConfig } from 'src/config/config';

/** How long one JWKS request may take. */
const JWKS_TIMEOUT_MS = 5000;
/** JWKS requests per minute for a `kid` the newest key set does not list (a rotation, or a forged token). */
const UNKNOWN_KID_REFETCHES_PER_MINUTE = 1;

/**
 * The identity issuer's signing keys, from its JWKS through jwks-rsa. A `kid` the newest key set
 * lists is served from a per-kid cache of IDENTITY_JWKS_TTL_S and refetched when that expires,
 * never throttled; a `kid` it does not list refetches through jwks-rsa's rate limit, so a flood
 * of forged kids cannot hammer the issuer, nor use up the refetches real sessions need. Each key
 * set fetched records when it listed each kid: a verified token is remembered no longer than that
 * listing is fresh, so a key the issuer removes stops working within the TTL.
 */
@Injectable()
export class IssuerKeys {
  /** kid -> epoch ms of the newest fetched key set that lists it. */
  private readonly listed = new Map<string, number>();
  private fetched = false;
  private readonly listedKey?: SecretOrKeyProvider;
  private readonly unlistedKey?: SecretOrKeyProvider;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    const jwksUri = config.identityJwksUri;
    if (!jwksUri) return;
    const fetcher = (uri: string) => this.fetch(uri);
    this.listedKey = passportJwtSecret({ jwksUri, fetcher, cache: true, cacheMaxAge: config.jwksTtlSeconds * 1000 }) as SecretOrKeyProvider;
    this.unlistedKey = passportJwtSecret({ jwksUri, fetcher, cache: false, rateLimit: true, jwksRequestsPerMinute: UNKNOWN_KID_REFETCHES_PER_MINUTE }) as SecretOrKeyProvider;
  }

  /** passport-jwt's key lookup: the public key for the token's `kid`, or a failure (no `kid`, unknown key, issuer unreachable). */
  readonly secretOrKeyProvider: SecretOrKeyProvider = (request, token, done) => {
    const kid = kidOf(token);
    if (!this.listedKey || !this.unlistedKey || kid === null) return done(new Error('no signing key'));
    const provider = !this.fetched || this.listed.has(kid) ? this.listedKey : this.unlistedKey;
    provider(request, token, done);
  };

  /** Epoch ms after which the key set that vouched for `kid` is stale (0 when the newest set does not list it). */
  listedUntil(kid: string): number {
    const at = this.listed.get(kid);
    return at === undefined ? 0 : at + this.config.jwksTtlSeconds * 1000;
  }

  private async fetch(uri: string): Promise<{ keys: unknown }> {
    const response = await fetch(uri, { signal: AbortSignal.timeout(JWKS_TIMEOUT_MS) });
    if (!response.ok) throw new Error(`JWKS answered ${response.status}`);
    const body = (await response.json()) as { keys?: unknown };
    const keys = Array.isArray(body.keys) ? (body.keys as { kid?: unknown }[]) : [];
    const now = Date.now();
    this.listed.clear();
    for (const key of keys) if (typeof key?.kid === 'string') this.listed.set(key.kid, now);
    this.fetched = true;
    return { keys };
  }
}

/** The `kid` of a token's protected header, or null (not a JWT, or no string `kid`). */
export function kidOf(token: string): string | null {
  try {
    const kid = decode(token, { complete: true })?.header.kid;
    return typeof kid === 'string' ? kid : null;
  } catch {
    return null;
  }
}
