import { Inject, Injectable } from '@nestjs/common';
import { exportJWK, generateKeyPair, importJWK, JWK, SignJWT } from 'jose';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { randomUUID } from 'node:crypto';
import { APP_CONFIG, AppConfig } from 'src/config/config';

export const DEV_IDENTITY_PATH = '/dev-identity';
const KEY_FILE = '.data/dev-identity/key.json';

interface StoredKey {
  kid: string;
  privateJwk: JWK;
  publicJwk: JWK;
}

/**
 * The development issuer of CONTRACT.md 2.1: an RS256 key pair kept under `.data/`, its JWKS
 * served at `/dev-identity/.well-known/jwks.json`, tokens printed by `cli dev:token`.
 */
@Injectable()
export class DevIdentity {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  get issuer(): string {
    return `${this.config.publicUrl}${DEV_IDENTITY_PATH}`;
  }

  async jwks(): Promise<{ keys: JWK[] }> {
    const key = await this.key();
    return { keys: [key.publicJwk] };
  }

  async token(subject: string, email: string | undefined, ttlSeconds: number): Promise<string> {
    const key = await this.key();
    const privateKey = await importJWK(key.privateJwk, 'RS256');
    const claims: Record<string, unknown> = email ? { email } : {};
    return new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'JWT' })
      .setIssuer(this.issuer)
      .setSubject(subject)
      .setIssuedAt()
      .setExpirationTime(Math.floor(Date.now() / 1000) + ttlSeconds)
      .sign(privateKey);
  }

  private cached?: Promise<StoredKey>;

  private key(): Promise<StoredKey> {
    this.cached ??= this.loadOrCreate();
    return this.cached;
  }

  private async loadOrCreate(): Promise<StoredKey> {
    if (existsSync(KEY_FILE)) return JSON.parse(readFileSync(KEY_FILE, 'utf8')) as StoredKey;
    const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
    const kid = randomUUID();
    const stored: StoredKey = {
      kid,
      privateJwk: { ...(await exportJWK(privateKey)), kid, alg: 'RS256', use: 'sig' },
      publicJwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' },
    };
    mkdirSync(dirname(KEY_FILE), { recursive: true });
    writeFileSync(KEY_FILE, JSON.stringify(stored), { mode: 0o600 });
    return stored;
  }
}
