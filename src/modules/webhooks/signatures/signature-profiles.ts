import registryFile from 'src/modules/webhooks/signatures/signature-profiles.v1.json';

/** What a verified delivery establishes; broker evidence is never promoted to `vendor_signed`. */
export type EvidenceTrust = 'broker_attested' | 'vendor_signed';

/**
 * How the signature is computed and carried:
 * - `timestamp_v1`: header `t=<unix>,v1=<hex>[,v1=<hex>...]`, HMAC-SHA256 over `<t>.<body>`, hex.
 * - `body_hex`: header `[prefix]<hex>`, HMAC-SHA256 over the raw body, hex; no timestamp is signed.
 * - `standard_webhooks`: id, timestamp and signature headers; the signature header is a
 *   space-separated list of `v1,<base64>`, HMAC-SHA256 over `<id>.<timestamp>.<body>`.
 */
export type SignatureScheme = 'timestamp_v1' | 'body_hex' | 'standard_webhooks';

/** One entry of the reviewed registry (`signature-profiles.v1.json`). Header names are lower case. */
export interface SignatureProfile {
  name: string;
  trust: EvidenceTrust;
  /** `native`: a native connection in native custody; `federated`: a federated connection with a broker reference. */
  custody: 'native' | 'federated';
  /** The connection's lane (`source`) the profile serves. */
  lane: 'native' | 'broker_a' | 'broker_b';
  scheme: SignatureScheme;
  signature_header: string;
  /** Text before the hex signature in the header (`sha256=`), or null. */
  signature_prefix: string | null;
  timestamp_header: string | null;
  id_header: string | null;
  /** A header that must carry a UUID-shaped delivery id (unauthenticated; the gateway deduplicates on it). */
  delivery_id_header: string | null;
  /** An unauthenticated event-family header; the gateway derives the family from the signed payload and refuses a conflicting header. */
  event_header: string | null;
  /** `utf8`: the secret's bytes are the key; `whsec_base64`: the key is the base64 after an optional `whsec_` prefix. */
  secret_encoding: 'utf8' | 'whsec_base64';
}

/** The closed, reviewed registry of signature profiles, in registry order. */
export const SIGNATURE_PROFILES: readonly SignatureProfile[] = Object.freeze(registryFile.profiles as SignatureProfile[]);

export const SIGNATURE_PROFILE_NAMES: readonly string[] = SIGNATURE_PROFILES.map((p) => p.name);

/** The profile called `name`, or null when the registry has none. */
export function signatureProfile(name: string): SignatureProfile | null {
  return SIGNATURE_PROFILES.find((p) => p.name === name) ?? null;
}
