import { Inject, Injectable, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { decode } from 'jsonwebtoken';
import { JwksClient } from 'jwks-rsa';
import { SecretOrKeyProvider } from 'passport-jwt';
import { APP_CONFIG, AppConfig } from 'src/config/config';

/** How long one JWKS request may take. */
const JWKS_TIMEOUT_MS = 5000;
/** How often the issuer's key set is read: a key the issuer publishes is usable within this. */
export const JWKS_POLL_MS = 1000;

/**
 * The identity issuer's signing keys: the JWKS read through jwks-rsa every JWKS_POLL_MS (one
 * request at a time, never more often, whatever the traffic), and passport-jwt's key lookup
 * answered from the newest key set read. No token ever causes a JWKS request: a key the issuer
 * publishes is used within a second, and a flood of tokens naming kids it does not list costs
 * the issuer nothing (docs/decisions.md, issue 29). Before the first successful read a lookup
 * waits for the next read (at the same pace) rather than starting one of its own. A key is
 * trusted for IDENTITY_JWKS_TTL_S after the last read that listed it, so a key the issuer removes,
 * or every key while the issuer is unreachable, stops verifying within that.
 */
@Injectable()
export class IssuerKeys implements OnModuleInit, OnModuleDestroy {
  /**
   * kid -> public key (PEM) and when the last read that listed it was made, on the monotonic clock
   * (`performance.now()`), so a step of the wall clock neither drops nor extends the keys' trust.
   */
  private readonly keys = new Map<string, { publicKey: string; listedAt: number }>();
  private readonly client?: JwksClient;
  private reading: Promise<void> | null = null;
  /** When the last read started (`performance.now()`). */
  private lastRead = -Infinity;
  private timer?: NodeJS.Timeout;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    if (!config.identityJwksUri) return;
    this.client = new JwksClient({ jwksUri: config.identityJwksUri, cache: false, rateLimit: false, timeout: JWKS_TIMEOUT_MS, fetcher: (uri) => this.fetch(uri) });
  }

  onModuleInit(): void {
    if (!this.client) return;
    void this.read();
    this.timer = setInterval(() => {
      if (performance.now() - this.lastRead >= JWKS_POLL_MS / 2) void this.read();
    }, JWKS_POLL_MS);
    this.timer.unref();
  }

  onModuleDestroy(): void {
    clearInterval(this.timer);
  }

  /** passport-jwt's key lookup: the public key for the token's `kid`, or a failure (no `kid`, a key the issuer does not list, issuer unreachable). */
  readonly secretOrKeyProvider: SecretOrKeyProvider = (_request, token, done) => {
    const kid = kidOf(token);
    if (!this.client || kid === null) return done(new Error('no signing key'));
    const answer = () => {
      const key = this.keys.get(kid);
      if (key && performance.now() < key.listedAt + this.config.jwksTtlSeconds * 1000) done(null, key.publicKey);
      else done(new Error('unknown signing key'));
    };
    if (this.keys.size > 0) answer();
    else void this.firstKeys().then(answer);
  };

  /**
   * Before any key is known (the first reads failed, or the issuer is this very process, not yet
   * listening when the first read ran): the read under way, else one no sooner than JWKS_POLL_MS
   * after the last, so a burst of sessions waits for reads at the poll's pace instead of making one each.
   */
  private async firstKeys(): Promise<void> {
    if (this.reading) return this.reading;
    const wait = this.lastRead + JWKS_POLL_MS - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    if (this.keys.size === 0) await this.read();
  }

  /** Epoch ms after which the key set that vouched for `kid` is stale (0 when the newest set does not list it), as seen now on the wall clock. */
  listedUntil(kid: string): number {
    const key = this.keys.get(kid);
    return key === undefined ? 0 : Date.now() + (key.listedAt + this.config.jwksTtlSeconds * 1000 - performance.now());
  }

  /** One read of the key set, unless one is under way; a failure keeps the keys read before. */
  private read(): Promise<void> {
    if (this.reading) return this.reading;
    this.lastRead = performance.now();
    this.reading = this.client!.getSigningKeys()
      .then((keys) => {
        const now = performance.now();
        const listed = new Set<string>();
        for (const key of keys) {
          if (typeof key.kid !== 'string') continue;
          listed.add(key.kid);
          this.keys.set(key.kid, { publicKey: key.getPublicKey(), listedAt: now });
        }
        for (const kid of [...this.keys.keys()]) if (!listed.has(kid)) this.keys.delete(kid);
      })
      .catch(() => undefined)
      .finally(() => {
        this.reading = null;
      });
    return this.reading;
  }

  private async fetch(uri: string): Promise<{ keys: unknown }> {
    const response = await fetch(uri, { signal: AbortSignal.timeout(JWKS_TIMEOUT_MS) });
    if (!response.ok) throw new Error(`JWKS answered ${response.status}`);
    const body = (await response.json()) as { keys?: unknown };
    return { keys: Array.isArray(body.keys) ? body.keys : [] };
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
