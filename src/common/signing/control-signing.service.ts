import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { generateKeyPairSync, hkdfSync, KeyObject } from 'node:crypto';
import { DataSource } from 'typeorm';
import { useCursorKeys } from 'src/common/pagination/cursor';
import { Ed25519Jwk, ed25519PrivateKey, Jwks, publicJwk, signCompactJws, signDetachedJws } from 'src/common/signing/jws';
import { APP_CONFIG, AppConfig } from 'src/config/config';

/** HKDF `info` of the list cursors' HMAC key (docs/decisions.md, Cursors). */
const CURSOR_KEY_INFO = 'agent-gateway-control/cursor/v1';

interface SigningKey {
  key: KeyObject;
  jwk: Ed25519Jwk;
}

/**
 * Control's Ed25519 signing key: `CONTROL_SIGNING_KEY` signs, `CONTROL_SIGNING_KEY_PREVIOUS` still
 * verifies during a rotation. Unset outside production (config refuses it in production), a key is
 * generated at first start and kept in `control_signing_keys`; every replica then reads the same
 * (the oldest) one. Audit checkpoints sign with it, snapshots carry a detached JWS of their digest,
 * and the list cursors' HMAC key is derived from it.
 */
@Injectable()
export class ControlSigning implements OnModuleInit {
  private readonly logger = new Logger('signing');
  private keys: SigningKey[] = [];

  constructor(
    private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async onModuleInit(): Promise<void> {
    const pems = this.config.controlSigningKey
      ? [this.config.controlSigningKey, this.config.controlSigningKeyPrevious].filter((pem): pem is string => pem !== undefined)
      : [await this.storedKey()];
    this.keys = pems.map((pem) => {
      const key = ed25519PrivateKey(pem);
      return { key, jwk: publicJwk(key) };
    });
    // Cursors are signed with a key derived from the current signing key; the previous one still verifies.
    useCursorKeys(this.keys.map(({ key }) => Buffer.from(hkdfSync('sha256', key.export({ format: 'der', type: 'pkcs8' }), Buffer.alloc(0), CURSOR_KEY_INFO, 32))));
  }

  /** The generated development key: the oldest stored one, created when there is none. */
  private async storedKey(): Promise<string> {
    const read = async () => ((await this.dataSource.query(`SELECT kid, private_key_pem FROM control_signing_keys ORDER BY created_at, kid LIMIT 1`)) as { kid: string; private_key_pem: string }[])[0];
    const stored = await read();
    if (stored) return stored.private_key_pem;
    const { privateKey } = generateKeyPairSync('ed25519');
    const pem = privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
    const { kid } = publicJwk(privateKey);
    await this.dataSource.query(`INSERT INTO control_signing_keys (kid, private_key_pem) VALUES ($1, $2) ON CONFLICT DO NOTHING`, [kid, pem]);
    // Replicas starting together may each insert one; all of them use the oldest.
    const chosen = (await read())!;
    if (chosen.kid === kid) {
      this.logger.warn({ msg: 'CONTROL_SIGNING_KEY is unset: generated a signing key and kept it in the database (development only)', kid });
    }
    return chosen.private_key_pem;
  }

  /** The public keys, current first then previous. */
  jwks(): Jwks {
    return { keys: this.keys.map((k) => k.jwk) };
  }

  /** A compact JWS (EdDSA) of `payload`'s canonical JSON under the current key. */
  sign(payload: unknown): string {
    const [current] = this.keys;
    return signCompactJws(current.key, current.jwk.kid, payload);
  }

  /** A detached compact JWS (RFC 7515 appendix F, EdDSA) over the string `payload`, with the current key's `kid`. */
  signDetached(payload: string): { kid: string; signature: string } {
    const [current] = this.keys;
    return { kid: current.jwk.kid, signature: signDetachedJws(current.key, current.jwk.kid, payload) };
  }
}
