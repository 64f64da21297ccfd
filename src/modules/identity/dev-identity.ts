import { Inject, Injectable } from '@nestjs/common';
import { sign } from 'jsonwebtoken';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { createPrivateKey, generateKeyPair, JsonWebKey, randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { APP_CONFIG, AppConfig } from 'src/config/config';

export const DEV_IDENTITY_PATH = '/dev-identity';
const KEY_FILE = '.data/dev-identity/key.json';

interface StoredKey {
  kid: string;
  privateJwk: JsonWebKey;
  publicJwk: JsonWebKey;
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

  async jwks(): Promise<{ keys: JsonWebKey[] }> {
    const key = await this.key();
    return { keys: [key.publicJwk] };
  }

  async token(subject: string, email: string | undefined, ttlSeconds: number): Promise<string> {
    const key = await this.key();
    const claims: Record<string, unknown> = email ? { email } : {};
    const privateKey = createPrivateKey({ key: key.privateJwk, format: 'jwk' });
    return sign(claims, privateKey, { algorithm: 'RS256', keyid: key.kid, issuer: this.issuer, subject, expiresIn: ttlSeconds });
  }

  private cached?: Promise<StoredKey>;

  private key(): Promise<StoredKey> {
    this.cached ??= this.loadOrCreate();
    return this.cached;
  }

  private async loadOrCreate(): Promise<StoredKey> {
    if (existsSync(KEY_FILE)) return JSON.parse(readFileSync(KEY_FILE, 'utf8')) as StoredKey;
    const { privateKey, publicKey } = await promisify(generateKeyPair)('rsa', { modulusLength: 2048 });
    const kid = randomUUID();
    const stored: StoredKey = {
      kid,
      privateJwk: { ...privateKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' },
      publicJwk: { ...publicKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' },
    };
    mkdirSync(dirname(KEY_FILE), { recursive: true });
    writeFileSync(KEY_FILE, JSON.stringify(stored), { mode: 0o600 });
    return stored;
  }
}
