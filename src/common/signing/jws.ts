import { createHash, createPrivateKey, createPublicKey, KeyObject, sign, verify } from 'node:crypto';
import { canonicalJson } from 'src/common/crypto/crypto';

/** A public Ed25519 key as a JWK (RFC 8037), `kid` its RFC 7638 thumbprint. */
export interface Ed25519Jwk {
  kty: 'OKP';
  crv: 'Ed25519';
  x: string;
  kid: string;
  alg: 'EdDSA';
  use: 'sig';
}

export interface Jwks {
  keys: Ed25519Jwk[];
}

const b64url = (bytes: Buffer | string) => Buffer.from(bytes).toString('base64url');

/** Reads an Ed25519 private key from PKCS#8 PEM; throws when it is not one. */
export function ed25519PrivateKey(pem: string): KeyObject {
  const key = createPrivateKey({ key: pem, format: 'pem' });
  if (key.asymmetricKeyType !== 'ed25519') throw new Error(`not an Ed25519 key (${key.asymmetricKeyType ?? 'unknown'})`);
  return key;
}

/** The public JWK of an Ed25519 key (private or public), with its RFC 7638 thumbprint as `kid`. */
export function publicJwk(key: KeyObject): Ed25519Jwk {
  const { x } = createPublicKey(key).export({ format: 'jwk' }) as { x: string };
  // RFC 7638: SHA-256 over the required members in lexicographic order, no whitespace.
  const kid = b64url(createHash('sha256').update(canonicalJson({ crv: 'Ed25519', kty: 'OKP', x })).digest());
  return { kty: 'OKP', crv: 'Ed25519', x, kid, alg: 'EdDSA', use: 'sig' };
}

/** Compact JWS (RFC 7515), EdDSA, header `{alg, kid}`, payload the canonical JSON of `payload`. */
export function signCompactJws(key: KeyObject, kid: string, payload: unknown): string {
  const input = `${b64url(JSON.stringify({ alg: 'EdDSA', kid }))}.${b64url(canonicalJson(payload))}`;
  return `${input}.${b64url(sign(null, Buffer.from(input), key))}`;
}

export type JwsCheck = { ok: true; kid: string; payload: unknown } | { ok: false };

/** Checks a compact EdDSA JWS against the keys of a JWKS, by `kid`; the payload parsed when it holds. */
export function verifyCompactJws(jws: string, jwks: Jwks): JwsCheck {
  const parts = jws.split('.');
  if (parts.length !== 3) return { ok: false };
  try {
    const header = JSON.parse(Buffer.from(parts[0], 'base64url').toString('utf8')) as { alg?: unknown; kid?: unknown };
    if (header.alg !== 'EdDSA' || typeof header.kid !== 'string') return { ok: false };
    const jwk = jwks.keys.find((k) => k.kid === header.kid && k.kty === 'OKP' && k.crv === 'Ed25519');
    if (!jwk) return { ok: false };
    const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: jwk.x }, format: 'jwk' });
    if (!verify(null, Buffer.from(`${parts[0]}.${parts[1]}`), key, Buffer.from(parts[2], 'base64url'))) return { ok: false };
    return { ok: true, kid: header.kid, payload: JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8')) };
  } catch {
    return { ok: false };
  }
}
