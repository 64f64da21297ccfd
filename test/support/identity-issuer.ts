import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, JWK, KeyLike, SignJWT } from 'jose';
import { randomUUID } from 'node:crypto';

export interface TokenOptions {
  sub?: string;
  email?: string | null;
  azp?: string;
  issuer?: string;
  expiresInS?: number;
  kid?: string;
  omit?: ('exp' | 'sub' | 'iss')[];
  key?: KeyLike;
}

/** A local OIDC-style issuer: serves a JWKS over HTTP and signs RS256 session tokens. A double of the identity provider. */
export class IdentityIssuer {
  private server?: Server;
  /** Every key it ever made, by kid, and whether its JWKS still publishes it; tokens are signed with the newest unless told otherwise. */
  private readonly keys = new Map<string, { privateKey: KeyLike; publicJwk: JWK; published: boolean }>();
  kid = '';
  jwksRequests = 0;
  url = '';

  static async start(): Promise<IdentityIssuer> {
    const issuer = new IdentityIssuer();
    await issuer.rotate();
    issuer.server = createServer((req, res) => {
      if (req.url === '/.well-known/jwks.json') {
        issuer.jwksRequests++;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ keys: [...issuer.keys.values()].filter((key) => key.published).map((key) => key.publicJwk) }));
        return;
      }
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => issuer.server!.listen(0, '127.0.0.1', resolve));
    issuer.url = `http://127.0.0.1:${(issuer.server!.address() as AddressInfo).port}`;
    return issuer;
  }

  /** Publishes a new signing key beside the current ones and signs with it from now on; returns its kid. */
  async rotate(): Promise<string> {
    const kid = randomUUID();
    const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
    this.keys.set(kid, { privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' }, published: true });
    this.kid = kid;
    return kid;
  }

  /** Stops publishing the key `kid` (a compromised key, say): relying parties must stop accepting its tokens once they refetch. */
  remove(kid: string): void {
    this.keys.get(kid)!.published = false;
  }

  get publicKeyJwk(): JWK {
    return this.keys.get(this.kid)!.publicJwk;
  }

  async token(options: TokenOptions = {}): Promise<string> {
    const claims: Record<string, unknown> = {};
    if (options.email !== null) claims.email = options.email ?? `${options.sub ?? 'user'}@example.com`;
    if (options.azp) claims.azp = options.azp;
    const kid = options.kid ?? this.kid;
    const jwt = new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid }).setIssuedAt();
    const omit = new Set(options.omit ?? []);
    if (!omit.has('iss')) jwt.setIssuer(options.issuer ?? this.url);
    if (!omit.has('sub')) jwt.setSubject(options.sub ?? `user-${randomUUID()}`);
    if (!omit.has('exp')) jwt.setExpirationTime(Math.floor(Date.now() / 1000) + (options.expiresInS ?? 3600));
    return jwt.sign(options.key ?? (this.keys.get(kid) ?? this.keys.get(this.kid)!).privateKey);
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }
}
