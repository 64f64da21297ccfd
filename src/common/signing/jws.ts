import { createHash, createPrivateKey, createPublicKey, KeyObject, sign, verify } from 'node:crypto';
import { readFile } from 'node:fs/promises';
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

/** The RFC 7638 thumbprint of an Ed25519 public key: SHA-256 over the required members in lexicographic order, no whitespace. */
export function thumbprint(x: string): string {
  return b64url(createHash('sha256').update(canonicalJson({ crv: 'Ed25519', kty: 'OKP', x })).digest());
}

/** The public JWK of an Ed25519 key (private or public), with its RFC 7638 thumbprint as `kid`. */
export function publicJwk(key: KeyObject): Ed25519Jwk {
  const { x } = createPublicKey(key).export({ format: 'jwk' }) as { x: string };
  return { kty: 'OKP', crv: 'Ed25519', x, kid: thumbprint(x), alg: 'EdDSA', use: 'sig' };
}

/** A JWK exactly as control publishes one: the six members, an Ed25519 `x` of 32 bytes, `kid` its thumbprint. */
export function isEd25519Jwk(value: unknown): value is Ed25519Jwk {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const jwk = value as Record<string, unknown>;
  return (
    Object.keys(jwk).sort().join(',') === 'alg,crv,kid,kty,use,x' &&
    jwk.kty === 'OKP' &&
    jwk.crv === 'Ed25519' &&
    jwk.alg === 'EdDSA' &&
    jwk.use === 'sig' &&
    typeof jwk.x === 'string' &&
    /^[A-Za-z0-9_-]{43}$/.test(jwk.x) &&
    jwk.kid === thumbprint(jwk.x)
  );
}

/** Compact JWS (RFC 7515), EdDSA, header `{alg, kid}`, payload the canonical JSON of `payload`. */
export function signCompactJws(key: KeyObject, kid: string, payload: unknown): string {
  const input = `${b64url(JSON.stringify({ alg: 'EdDSA', kid }))}.${b64url(canonicalJson(payload))}`;
  return `${input}.${b64url(sign(null, Buffer.from(input), key))}`;
}

export type JwsCheck = { ok: true; kid: string; payload: unknown } | { ok: false };

/** The `kid` of the key of `jwks` under which `signature` signs `protectedHeader.payloadPart`, or null. */
function verifiedKid(protectedHeader: string, payloadPart: string, signature: string, jwks: Jwks): string | null {
  const header = JSON.parse(Buffer.from(protectedHeader, 'base64url').toString('utf8')) as { alg?: unknown; kid?: unknown };
  // Exactly the header control writes: no member (`crit`, `b64`, ...) that would change what the signature means.
  if (header === null || typeof header !== 'object' || Object.keys(header).length !== 2 || header.alg !== 'EdDSA' || typeof header.kid !== 'string') return null;
  const jwk = jwks.keys.find((k) => k.kid === header.kid && k.kty === 'OKP' && k.crv === 'Ed25519');
  if (!jwk) return null;
  const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: jwk.x }, format: 'jwk' });
  return verify(null, Buffer.from(`${protectedHeader}.${payloadPart}`), key, Buffer.from(signature, 'base64url')) ? header.kid : null;
}

/** Checks a compact EdDSA JWS against the keys of a JWKS, by `kid`; the payload parsed when it holds. */
export function verifyCompactJws(jws: string, jwks: Jwks): JwsCheck {
  const parts = jws.split('.');
  if (parts.length !== 3) return { ok: false };
  try {
    const kid = verifiedKid(parts[0], parts[1], parts[2], jwks);
    if (kid === null) return { ok: false };
    return { ok: true, kid, payload: JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8')) };
  } catch {
    return { ok: false };
  }
}

/**
 * Detached compact JWS (RFC 7515 appendix F), EdDSA, header `{alg, kid}`: the signature covers
 * `header.base64url(payload)` but the payload part is left empty (`header..signature`); the
 * verifier supplies the payload it holds.
 */
export function signDetachedJws(key: KeyObject, kid: string, payload: string): string {
  const header = b64url(JSON.stringify({ alg: 'EdDSA', kid }));
  return `${header}..${b64url(sign(null, Buffer.from(`${header}.${b64url(payload)}`), key))}`;
}

/** Checks a detached compact JWS over `payload` against the keys of a JWKS, by `kid`. */
export function verifyDetachedJws(jws: string, payload: string, jwks: Jwks): { ok: true; kid: string } | { ok: false } {
  const parts = jws.split('.');
  if (parts.length !== 3 || parts[1] !== '') return { ok: false };
  try {
    const kid = verifiedKid(parts[0], b64url(payload), parts[2], jwks);
    return kid === null ? { ok: false } : { ok: true, kid };
  } catch {
    return { ok: false };
  }
}

/** A JWKS from a file or an http(s) URL (the offline verifiers' `--keys`). */
export async function loadKeys(source: string): Promise<Jwks> {
  const text = /^https?:\/\//.test(source)
    ? await fetch(source, { signal: AbortSignal.timeout(10_000) }).then(async (res) => {
        if (!res.ok) throw new Error(`keys not available: ${source} answered ${res.status}`);
        return res.text();
      })
    : await readFile(source, 'utf8');
  const jwks = JSON.parse(text) as Partial<Jwks>;
  if (!Array.isArray(jwks.keys)) throw new Error(`not a JWKS: ${source}`);
  return jwks as Jwks;
}
