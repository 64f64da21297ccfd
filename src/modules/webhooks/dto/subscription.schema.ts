import { FieldError, FieldValidationError } from 'src/common/http/errors';
import { parseRfc3339 } from 'src/common/time/time';
import { signatureProfile } from 'src/modules/webhooks/signatures/signature-profiles';
import { MAX_PREVIOUS_KEY_OVERLAP_MS } from 'src/modules/webhooks/signatures/verify';
import { isJsonObject } from 'src/common/json/json';

const DAY_MS = 24 * 3600 * 1000;
export const MIN_KEY_VALIDITY_MS = DAY_MS;
export const MAX_KEY_VALIDITY_MS = 30 * DAY_MS;
export const MAX_TOLERANCE_SECONDS = 3600;
export const MAX_SIGNING_KEYS = 2;
const MAX_URL_LENGTH = 2048;
const ENVELOPE = /^[A-Za-z0-9._~+/=:-]{16,16384}$/;
const KEY_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const LAST4 = /^[\x21-\x7e]{4}$/;

const BODY_FIELDS = new Set(['signature_profile', 'tolerance_seconds', 'notification_url', 'signing_keys']);
const KEY_FIELDS = new Set(['key_version', 'envelope', 'key_id', 'last4', 'valid_from', 'valid_until']);

/** One entry of the sealed signing-key contract the gateway's `seal-webhook-key` prints. */
export interface SigningKeyContract {
  key_version: number;
  envelope: string;
  key_id: string;
  last4: string;
  valid_from: Date;
  valid_until: Date;
}

export interface SubscriptionConfig {
  signature_profile: string;
  tolerance_seconds: number;
  notification_url: string | null;
  /** Newest key version first. */
  signing_keys: SigningKeyContract[];
}

export interface SubscriptionPath {
  workspaceId: string;
  connectionId: string;
  subscriptionId: string;
}

type Loc = (string | number)[];

/**
 * Validates a subscription configuration against its closed schema. Every failure names where
 * and which rule, never the rejected value (nor an unknown field's name): a misplaced secret can
 * never come back in an error body.
 */
export function parseSubscriptionConfig(body: unknown, path: SubscriptionPath, now: Date): SubscriptionConfig {
  const errors: FieldError[] = [];
  const fail = (loc: Loc, msg: string, type = 'value_error') => errors.push({ loc: ['body', ...loc], msg, type });
  if (!isJsonObject(body)) throw new FieldValidationError([{ loc: ['body'], msg: 'must be a JSON object', type: 'model_type' }]);
  if (Object.keys(body).some((k) => !BODY_FIELDS.has(k))) fail([], 'unknown fields are not permitted', 'extra_forbidden');

  const profile = typeof body.signature_profile === 'string' ? signatureProfile(body.signature_profile) : null;
  if (body.signature_profile === undefined) fail(['signature_profile'], 'field required', 'missing');
  else if (!profile) fail(['signature_profile'], 'must name a profile of the reviewed registry', 'enum');

  const tolerance = body.tolerance_seconds;
  if (tolerance === undefined) fail(['tolerance_seconds'], 'field required', 'missing');
  else if (!Number.isInteger(tolerance) || (tolerance as number) < 1 || (tolerance as number) > MAX_TOLERANCE_SECONDS) {
    fail(['tolerance_seconds'], `must be an integer from 1 to ${MAX_TOLERANCE_SECONDS}`, 'int_type');
  }

  const url = body.notification_url ?? null;
  if (url !== null && !isIngressUrl(url, path)) {
    fail(['notification_url'], "must be an http(s) URL of this subscription's ingress path, without credentials, query or fragment");
  }

  const keys: SigningKeyContract[] = [];
  const list = body.signing_keys;
  if (list === undefined) fail(['signing_keys'], 'field required', 'missing');
  else if (!Array.isArray(list) || list.length < 1 || list.length > MAX_SIGNING_KEYS) fail(['signing_keys'], 'must list the current key and at most one previous key', 'list_type');
  else {
    list.forEach((item, i) => {
      const key = parseKey(item, ['signing_keys', i], now, fail);
      if (key) keys.push(key);
    });
  }

  if (errors.length === 0 && keys.length === 2) checkRotation(keys, fail);
  if (errors.length > 0) throw new FieldValidationError(errors);
  return {
    signature_profile: profile!.name,
    tolerance_seconds: tolerance as number,
    notification_url: url as string | null,
    signing_keys: keys.sort((a, b) => b.key_version - a.key_version),
  };
}

function parseKey(item: unknown, loc: Loc, now: Date, fail: (loc: Loc, msg: string, type?: string) => void): SigningKeyContract | null {
  if (!isJsonObject(item)) {
    fail(loc, 'must be a signing-key object', 'dict_type');
    return null;
  }
  let valid = true;
  const rule = (field: string, ok: boolean, msg: string, type = 'value_error') => {
    if (item[field] === undefined) fail([...loc, field], 'field required', 'missing');
    else if (!ok) fail([...loc, field], msg, type);
    else return;
    valid = false;
  };
  if (Object.keys(item).some((k) => !KEY_FIELDS.has(k))) {
    fail(loc, 'unknown fields are not permitted', 'extra_forbidden');
    valid = false;
  }
  const version = item.key_version;
  rule('key_version', Number.isInteger(version) && (version as number) >= 1 && (version as number) <= 2 ** 31 - 1, 'must be a positive integer', 'int_type');
  rule('envelope', typeof item.envelope === 'string' && ENVELOPE.test(item.envelope), 'must be a sealed envelope');
  rule('key_id', typeof item.key_id === 'string' && KEY_ID.test(item.key_id), 'must be a key id');
  rule('last4', typeof item.last4 === 'string' && LAST4.test(item.last4), 'must be the masked last four characters');
  const from = typeof item.valid_from === 'string' && item.valid_from.length <= 64 ? parseRfc3339(item.valid_from) : null;
  const until = typeof item.valid_until === 'string' && item.valid_until.length <= 64 ? parseRfc3339(item.valid_until) : null;
  rule('valid_from', from !== null, 'must be an RFC 3339 timestamp');
  rule('valid_until', until !== null, 'must be an RFC 3339 timestamp');
  if (!valid || !from || !until) return null;
  const validity = until.getTime() - from.getTime();
  if (validity < MIN_KEY_VALIDITY_MS || validity > MAX_KEY_VALIDITY_MS) {
    fail([...loc, 'valid_until'], 'validity must be from 1 to 30 days');
    return null;
  }
  if (until.getTime() <= now.getTime()) {
    fail([...loc, 'valid_until'], 'the key has expired');
    return null;
  }
  return { key_version: version as number, envelope: item.envelope as string, key_id: item.key_id as string, last4: item.last4 as string, valid_from: from, valid_until: until };
}

/**
 * The newer version is the current key; the previous one must hand over without a gap and
 * overlap it by at most 24 hours. `keys` are in request order.
 */
function checkRotation(keys: SigningKeyContract[], fail: (loc: Loc, msg: string, type?: string) => void): void {
  const [a, b] = keys;
  if (a.key_version === b.key_version) {
    fail(['signing_keys'], 'key versions must be distinct');
    return;
  }
  const [current, previous] = a.key_version > b.key_version ? [a, b] : [b, a];
  const at = ['signing_keys', keys.indexOf(previous)];
  if (previous.valid_from.getTime() >= current.valid_from.getTime()) {
    fail(['signing_keys', keys.indexOf(current), 'valid_from'], 'the newer key version must become valid after the previous one');
    return;
  }
  const overlap = previous.valid_until.getTime() - current.valid_from.getTime();
  if (overlap < 0) fail([...at, 'valid_until'], 'the previous key must stay valid until the current key becomes valid');
  else if (overlap > MAX_PREVIOUS_KEY_OVERLAP_MS) fail([...at, 'valid_until'], 'the previous key may overlap the current key by at most 24 hours');
}

/** An http(s) URL, no userinfo, query or fragment, whose path is this subscription's `/webhooks/...` or `/hooks/...` path. */
function isIngressUrl(value: unknown, path: SubscriptionPath): boolean {
  if (typeof value !== 'string' || value.length > MAX_URL_LENGTH) return false;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.username || url.password || url.search || url.hash || value.includes('#') || value.includes('?')) return false;
  const tail = `/${path.workspaceId}/${path.connectionId}/${path.subscriptionId}`;
  return url.pathname === `/webhooks${tail}` || url.pathname === `/hooks${tail}`;
}

