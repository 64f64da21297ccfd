import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { generateKeyPairSync, hkdfSync, KeyObject } from 'node:crypto';
import { SigningKeysRepository } from 'src/platform/signing/signing-keys.repository';
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
 * Control's Ed25519 signing keys: `CONTROL_SIGNING_KEY` signs; `CONTROL_SIGNING_KEY_PREVIOUS` (the
 * key rotated from) and `CONTROL_SIGNING_KEY_NEXT` (the key about to sign) are published and still
 * verify (docs/runbook.md, rotation). Unset outside production (config refuses it in production),
 * a key is generated at first start and kept in `control_signing_keys`; every replica then reads
 * the same (the oldest) one. Every public key is recorded in `control_signing_public_keys` before
 * it is used; the recorded ones no longer live are the retired set, which verifies old signatures
 * only. Audit checkpoints sign with the current key, snapshots carry a detached JWS of their
 * digest, and the list cursors' HMAC key is derived from it.
 */
@Injectable()
export class ControlSigning implements OnModuleInit {
  private readonly logger = new Logger('signing');
  /** Current first, then previous and next when set. */
  private keys: SigningKey[] = [];
  private next: SigningKey | null = null;
  private retired: Ed25519Jwk[] = [];

  constructor(
    private readonly repository: SigningKeysRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async onModuleInit(): Promise<void> {
    const { controlSigningKey: current, controlSigningKeyPrevious: previous, controlSigningKeyNext: next } = this.config;
    const pems = current ? [current, previous, next].filter((pem): pem is string => pem !== undefined) : [await this.storedKey()];
    this.keys = pems.map((pem) => {
      const key = ed25519PrivateKey(pem);
      return { key, jwk: publicJwk(key) };
    });
    this.next = next ? this.keys[this.keys.length - 1] : null;
    // Recorded before any of them signs: a key can only ever leave the live set as a retired key.
    await this.repository.recordPublicKeys(this.keys.map(({ jwk }) => ({ kid: jwk.kid, x: jwk.x })));
    const live = new Set(this.keys.map(({ jwk }) => jwk.kid));
    const recorded = await this.repository.publicKeys();
    this.retired = recorded.filter((k) => !live.has(k.kid)).map((k) => ({ kty: 'OKP', crv: 'Ed25519', x: k.x, kid: k.kid, alg: 'EdDSA', use: 'sig' }));
    // Cursors are signed with a key derived from the current signing key; the previous and next ones still verify.
    useCursorKeys(this.keys.map(({ key }) => Buffer.from(hkdfSync('sha256', key.export({ format: 'der', type: 'pkcs8' }), Buffer.alloc(0), CURSOR_KEY_INFO, 32))));
  }

  /** The generated development key: the oldest stored one, created when there is none. */
  private async storedKey(): Promise<string> {
    const stored = await this.repository.oldestKey();
    if (stored) return stored.privateKeyPem;
    const { privateKey } = generateKeyPairSync('ed25519');
    const pem = privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
    const { kid } = publicJwk(privateKey);
    await this.repository.insertKey(kid, pem);
    // Replicas starting together may each insert one; all of them use the oldest.
    const chosen = (await this.repository.oldestKey())!;
    if (chosen.kid === kid) {
      this.logger.warn({ msg: 'CONTROL_SIGNING_KEY is unset: generated a signing key and kept it in the database (development only)', kid });
    }
    return chosen.privateKeyPem;
  }

  /** The live public keys, current first, then previous and next: what verifies new signatures. */
  jwks(): Jwks {
    return { keys: this.keys.map((k) => k.jwk) };
  }

  /** Every public key control used before and no longer publishes as live, oldest first: for verifying old signatures only. */
  retiredJwks(): Jwks {
    return { keys: this.retired };
  }

  /** The live and the retired keys: what verifies a stored history (checkpoints signed under any key since). */
  historyJwks(): Jwks {
    return { keys: [...this.jwks().keys, ...this.retired] };
  }

  /**
   * The kids whose signatures are fresh: the current key's, and the next one's (a replica not yet
   * restarted with it must not undo a newer replica's signatures during a rolling rotation).
   */
  freshKids(): string[] {
    return [this.keys[0].jwk.kid, ...(this.next ? [this.next.jwk.kid] : [])];
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
