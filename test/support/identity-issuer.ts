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
  private privateKey!: KeyLike;
  private publicJwk!: JWK;
  readonly kid = randomUUID();
  jwksRequests = 0;
  url = '';

  static async start(): Promise<IdentityIssuer> {
    const issuer = new IdentityIssuer();
    const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
    issuer.privateKey = privateKey;
    issuer.publicJwk = { ...(await exportJWK(publicKey)), kid: issuer.kid, alg: 'RS256', use: 'sig' };
    issuer.server = createServer((req, res) => {
      if (req.url === '/.well-known/jwks.json') {
        issuer.jwksRequests++;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ keys: [issuer.publicJwk] }));
        return;
      }
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => issuer.server!.listen(0, '127.0.0.1', resolve));
    issuer.url = `http://127.0.0.1:${(issuer.server!.address() as AddressInfo).port}`;
    return issuer;
  }

  get publicKeyJwk(): JWK {
    return this.publicJwk;
  }

  async token(options: TokenOptions = {}): Promise<string> {
    const claims: Record<string, unknown> = {};
    if (options.email !== null) claims.email = options.email ?? `${options.sub ?? 'user'}@example.com`;
    if (options.azp) claims.azp = options.azp;
    const jwt = new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: options.kid ?? this.kid }).setIssuedAt();
    const omit = new Set(options.omit ?? []);
    if (!omit.has('iss')) jwt.setIssuer(options.issuer ?? this.url);
    if (!omit.has('sub')) jwt.setSubject(options.sub ?? `user-${randomUUID()}`);
    if (!omit.has('exp')) jwt.setExpirationTime(Math.floor(Date.now() / 1000) + (options.expiresInS ?? 3600));
    return jwt.sign(options.key ?? this.privateKey);
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }
}
