import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { EvidenceTrust, SignatureProfile } from 'src/modules/webhooks/signatures/signature-profiles';

/** The previous key verifies only until this long after the current key became valid. */
export const MAX_PREVIOUS_KEY_OVERLAP_MS = 24 * 3600 * 1000;
/** Signatures read from one header; more are ignored (bounded work per delivery). */
export const MAX_SIGNATURES = 8;
/** Longest signature, timestamp or id header read. */
export const MAX_HEADER_LENGTH = 4096;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const UNIX_SECONDS = /^\d{1,12}$/;
const HEX_SHA256 = /^[0-9a-f]{64}$/i;

/** A plaintext signing key with its version and validity window `[valid_from, valid_until)`. */
export interface VerificationKey {
  key_version: number;
  secret: string;
  valid_from: Date;
  valid_until: Date;
}

/** Request headers as Node presents them (names in any case). */
export type Headers = Record<string, string | string[] | undefined>;

export interface VerifyOptions {
  keys: VerificationKey[];
  toleranceSeconds: number;
  now: Date;
}

export type VerifyFailure = 'malformed' | 'no_usable_key' | 'signature_mismatch' | 'timestamp_outside_tolerance';

export type Verification =
  | { ok: true; trust: EvidenceTrust; key_version: number; timestamp: number | null }
  | { ok: false; reason: VerifyFailure };

interface Signed {
  /** The bytes the HMAC covers. */
  content: Buffer;
  /** Candidate signatures, decoded. */
  signatures: Buffer[];
  timestamp: number | null;
}

/**
 * Verifies a delivery against `profile`: the raw body is HMACed (before any parsing) with the
 * current key and, inside the rotation overlap, the previous key, comparing in constant time;
 * a signed timestamp must then lie within `toleranceSeconds` of `now` in both directions.
 */
export function verifyDelivery(profile: SignatureProfile, headers: Headers, body: Buffer, options: VerifyOptions): Verification {
  const signed = parseSigned(profile, headers, body);
  if (!signed) return { ok: false, reason: 'malformed' };
  const keys = usableKeys(options.keys, options.now);
  if (keys.length === 0) return { ok: false, reason: 'no_usable_key' };
  const match = keys.find((key) => {
    const expected = hmac(profile, key.secret, signed.content);
    // Every candidate is compared, so the time taken does not depend on which one matches.
    return signed.signatures.map((s) => s.length === expected.length && timingSafeEqual(s, expected)).includes(true);
  });
  if (!match) return { ok: false, reason: 'signature_mismatch' };
  if (signed.timestamp !== null && Math.abs(options.now.getTime() / 1000 - signed.timestamp) > options.toleranceSeconds) {
    return { ok: false, reason: 'timestamp_outside_tolerance' };
  }
  return { ok: true, trust: profile.trust, key_version: match.key_version, timestamp: signed.timestamp };
}

/**
 * The keys a delivery may be signed with at `now`: the highest-version key whose window holds
 * `now` (current) and the next one below it (previous), the latter only until 24 hours after the
 * current key became valid. Newest first.
 */
export function usableKeys(keys: VerificationKey[], now: Date): VerificationKey[] {
  const t = now.getTime();
  const valid = keys.filter((k) => k.valid_from.getTime() <= t && t < k.valid_until.getTime()).sort((a, b) => b.key_version - a.key_version);
  const [current, previous] = valid;
  if (!current) return [];
  if (previous && t < current.valid_from.getTime() + MAX_PREVIOUS_KEY_OVERLAP_MS) return [current, previous];
  return [current];
}

/** The headers a sender sets for `body` (tests, fixtures and the published vectors). */
export function signDelivery(
  profile: SignatureProfile,
  secret: string,
  body: Buffer,
  options: { timestamp?: number; id?: string; deliveryId?: string } = {},
): Record<string, string> {
  const timestamp = options.timestamp ?? Math.floor(Date.now() / 1000);
  const headers: Record<string, string> = {};
  switch (profile.scheme) {
    case 'timestamp_v1':
      headers[profile.signature_header] = `t=${timestamp},v1=${hmac(profile, secret, Buffer.concat([Buffer.from(`${timestamp}.`), body])).toString('hex')}`;
      break;
    case 'body_hex':
      headers[profile.signature_header] = `${profile.signature_prefix ?? ''}${hmac(profile, secret, body).toString('hex')}`;
      break;
    case 'standard_webhooks': {
      const id = options.id ?? `msg_${randomUUID().replace(/-/g, '')}`;
      headers[profile.id_header!] = id;
      headers[profile.timestamp_header!] = String(timestamp);
      headers[profile.signature_header] = `v1,${hmac(profile, secret, Buffer.concat([Buffer.from(`${id}.${timestamp}.`), body])).toString('base64')}`;
      break;
    }
  }
  if (profile.delivery_id_header) headers[profile.delivery_id_header] = options.deliveryId ?? randomUUID();
  return headers;
}

function hmac(profile: SignatureProfile, secret: string, content: Buffer): Buffer {
  return createHmac('sha256', secretBytes(profile, secret)).update(content).digest();
}

function secretBytes(profile: SignatureProfile, secret: string): Buffer {
  if (profile.secret_encoding === 'utf8') return Buffer.from(secret, 'utf8');
  return Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
}

/** One header value; null when absent, repeated or too long. */
function header(headers: Headers, name: string): string | null {
  let found: string | null = null;
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() !== name) continue;
    if (found !== null || typeof value !== 'string' || value.length > MAX_HEADER_LENGTH) return null;
    found = value;
  }
  return found;
}

function parseSigned(profile: SignatureProfile, headers: Headers, body: Buffer): Signed | null {
  const signature = header(headers, profile.signature_header);
  if (signature === null) return null;
  if (profile.delivery_id_header !== null && !UUID.test(header(headers, profile.delivery_id_header) ?? '')) return null;
  switch (profile.scheme) {
    case 'timestamp_v1': {
      let timestamp: string | null = null;
      const signatures: Buffer[] = [];
      for (const part of signature.split(',')) {
        const eq = part.indexOf('=');
        if (eq < 0) continue;
        const [key, value] = [part.slice(0, eq).trim(), part.slice(eq + 1).trim()];
        if (key === 't') {
          if (timestamp !== null) return null;
          timestamp = value;
        } else if (key === 'v1' && HEX_SHA256.test(value) && signatures.length < MAX_SIGNATURES) {
          signatures.push(Buffer.from(value, 'hex'));
        }
      }
      if (timestamp === null || !UNIX_SECONDS.test(timestamp) || signatures.length === 0) return null;
      return { content: Buffer.concat([Buffer.from(`${timestamp}.`), body]), signatures, timestamp: Number(timestamp) };
    }
    case 'body_hex': {
      const prefix = profile.signature_prefix ?? '';
      const value = signature.trim();
      if (!value.startsWith(prefix) || !HEX_SHA256.test(value.slice(prefix.length))) return null;
      return { content: body, signatures: [Buffer.from(value.slice(prefix.length), 'hex')], timestamp: null };
    }
    case 'standard_webhooks': {
      const id = header(headers, profile.id_header!);
      const timestamp = header(headers, profile.timestamp_header!);
      if (!id || timestamp === null || !UNIX_SECONDS.test(timestamp)) return null;
      const signatures = signature
        .split(' ')
        .filter((s) => s.startsWith('v1,'))
        .slice(0, MAX_SIGNATURES)
        .map((s) => Buffer.from(s.slice(3), 'base64'));
      if (signatures.length === 0) return null;
      return { content: Buffer.concat([Buffer.from(`${id}.${timestamp}.`), body]), signatures, timestamp: Number(timestamp) };
    }
  }
}
