import { canonicalJson, sha256Tagged } from 'src/common/crypto/crypto';
import { Jwks, verifyDetachedJws } from 'src/common/signing/jws';
import { isJsonObject } from 'src/common/json/json';

/** `sha256:` + hex SHA-256 of the canonical JSON of the snapshot without its `integrity` member. */
export function snapshotDigest(snapshot: Record<string, unknown>): string {
  const { integrity: _integrity, ...content } = snapshot;
  return sha256Tagged(canonicalJson(content));
}

export type SnapshotCheck = { ok: true; digest: string; kid: string } | { ok: false; reason: string };

/**
 * Checks a snapshot as a gateway must before applying it: the digest recomputed from the content,
 * and the detached signature over it under one of the keys (current or previous) of the JWKS.
 */
export function verifySnapshot(snapshot: unknown, jwks: Jwks): SnapshotCheck {
  if (!isJsonObject(snapshot)) return { ok: false, reason: 'not a JSON object' };
  const integrity = snapshot.integrity;
  if (!isJsonObject(integrity) || typeof integrity.digest !== 'string' || typeof integrity.kid !== 'string' || typeof integrity.signature !== 'string') {
    return { ok: false, reason: 'no integrity member' };
  }
  const digest = snapshotDigest(snapshot);
  if (digest !== integrity.digest) return { ok: false, reason: `digest mismatch: the content hashes to ${digest}, integrity says ${integrity.digest}` };
  const check = verifyDetachedJws(integrity.signature, digest, jwks);
  if (!check.ok || check.kid !== integrity.kid) return { ok: false, reason: `signature does not verify under the keys (kid ${integrity.kid})` };
  return { ok: true, digest, kid: check.kid };
}
