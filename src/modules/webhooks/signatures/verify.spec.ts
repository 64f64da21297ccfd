import { SIGNATURE_PROFILES, signatureProfile } from 'src/modules/webhooks/signatures/signature-profiles';
import vectorsFile from 'src/modules/webhooks/signatures/test-vectors.v1.json';
import { signDelivery, usableKeys, VerificationKey, verifyDelivery } from 'src/modules/webhooks/signatures/verify';

interface Vector {
  name: string;
  profile: string;
  secret: string;
  body: string;
  headers: Record<string, string>;
  now: number;
  tolerance_seconds: number;
  expect: string;
}
const VECTORS = vectorsFile.vectors as unknown as Vector[];
const DAY = 24 * 3600 * 1000;
const HOUR = 3600 * 1000;
const at = (seconds: number) => new Date(seconds * 1000);
const key = (key_version: number, secret: string, from: Date, until: Date): VerificationKey => ({ key_version, secret, valid_from: from, valid_until: until });

describe('signature profile registry', () => {
  it('is the closed list the specification names, with broker trust only for broker profiles', () => {
    expect(SIGNATURE_PROFILES.map((p) => [p.name, p.trust, p.custody, p.lane])).toEqual([
      ['vendor_a_v1', 'vendor_signed', 'native', 'native'],
      ['vendor_b_sha256', 'vendor_signed', 'native', 'native'],
      ['broker_a_sha256', 'broker_attested', 'federated', 'broker_a'],
      ['broker_b_sha256', 'broker_attested', 'federated', 'broker_b'],
      ['standard_webhooks_v1', 'vendor_signed', 'native', 'native'],
      ['svix_v1', 'vendor_signed', 'native', 'native'],
    ]);
    expect(signatureProfile('vendor_c')).toBeNull();
  });
});

describe('published test vectors', () => {
  it.each(VECTORS.map((v) => [v.name, v] as const))('%s', (_name, v) => {
    const profile = signatureProfile(v.profile)!;
    const now = at(v.now);
    const result = verifyDelivery(profile, v.headers, Buffer.from(v.body, 'utf8'), {
      keys: [key(1, v.secret, new Date(now.getTime() - DAY), new Date(now.getTime() + DAY))],
      toleranceSeconds: v.tolerance_seconds,
      now,
    });
    if (v.expect === 'valid') expect(result).toEqual({ ok: true, trust: profile.trust, key_version: 1, timestamp: profile.timestamp_header || profile.scheme === 'timestamp_v1' ? expect.any(Number) : null });
    else expect(result).toEqual({ ok: false, reason: v.expect });
  });

  it('signDelivery reproduces every valid vector byte for byte', () => {
    for (const v of VECTORS.filter((x) => x.expect === 'valid')) {
      const profile = signatureProfile(v.profile)!;
      const headers = v.headers;
      const signed = signDelivery(profile, v.secret, Buffer.from(v.body, 'utf8'), {
        timestamp: 1614265330,
        id: profile.id_header ? headers[profile.id_header] : undefined,
        deliveryId: profile.delivery_id_header ? headers[profile.delivery_id_header] : undefined,
      });
      expect(signed).toEqual(headers);
    }
  });
});

describe('verifyDelivery', () => {
  const profile = signatureProfile('vendor_a_v1')!;
  const body = Buffer.from('{"id":"evt_1","type":"charge.succeeded"}');
  const now = new Date('2026-03-01T12:00:00Z');
  const ts = Math.floor(now.getTime() / 1000);
  const previous = key(1, 'whsec_previous_key_material', new Date(now.getTime() - 10 * DAY), new Date(now.getTime() + 20 * HOUR));
  const current = key(2, 'whsec_current_key_material', new Date(now.getTime() - 2 * HOUR), new Date(now.getTime() + 7 * DAY));
  const verify = (secret: string, options: { at?: Date; tolerance?: number; keys?: VerificationKey[]; payload?: Buffer } = {}) =>
    verifyDelivery(profile, signDelivery(profile, secret, body, { timestamp: ts }), options.payload ?? body, {
      keys: options.keys ?? [previous, current],
      toleranceSeconds: options.tolerance ?? 300,
      now: options.at ?? now,
    });

  it('accepts the current key and reports its version and trust', () => {
    expect(verify(current.secret)).toEqual({ ok: true, trust: 'vendor_signed', key_version: 2, timestamp: ts });
  });

  it('refuses a tampered body and a wrong key', () => {
    expect(verify(current.secret, { payload: Buffer.from('{"id":"evt_1","type":"charge.refunded"}') })).toEqual({ ok: false, reason: 'signature_mismatch' });
    expect(verify('whsec_someone_else')).toEqual({ ok: false, reason: 'signature_mismatch' });
  });

  it('accepts the previous key inside the 24-hour overlap', () => {
    expect(verify(previous.secret)).toEqual({ ok: true, trust: 'vendor_signed', key_version: 1, timestamp: ts });
  });

  it('refuses the previous key outside the overlap even while its own window is open', () => {
    // One minute past the overlap (24 h after the current key became valid); the previous key's own window still open.
    const late = new Date(current.valid_from.getTime() + 24 * HOUR + 60_000);
    const keys = [{ ...previous, valid_until: new Date(late.getTime() + HOUR) }, current];
    const lateTs = Math.floor(late.getTime() / 1000);
    const headers = signDelivery(profile, previous.secret, body, { timestamp: lateTs });
    expect(verifyDelivery(profile, headers, body, { keys, toleranceSeconds: 300, now: late })).toEqual({ ok: false, reason: 'signature_mismatch' });
    const ok = signDelivery(profile, current.secret, body, { timestamp: lateTs });
    expect(verifyDelivery(profile, ok, body, { keys, toleranceSeconds: 300, now: late })).toMatchObject({ ok: true, key_version: 2 });
  });

  it('refuses a key before its window opens and after it closes', () => {
    const scheduled = key(3, 'whsec_scheduled_key', new Date(now.getTime() + HOUR), new Date(now.getTime() + 8 * DAY));
    expect(verify(scheduled.secret, { keys: [current, scheduled] })).toEqual({ ok: false, reason: 'signature_mismatch' });
    expect(verify(current.secret, { keys: [current], at: current.valid_until })).toEqual({ ok: false, reason: 'no_usable_key' });
  });

  it('bounds the signed timestamp in both directions by the tolerance', () => {
    expect(verify(current.secret, { at: new Date(now.getTime() + 301_000) })).toEqual({ ok: false, reason: 'timestamp_outside_tolerance' });
    expect(verify(current.secret, { at: new Date(now.getTime() - 301_000) })).toEqual({ ok: false, reason: 'timestamp_outside_tolerance' });
    expect(verify(current.secret, { at: new Date(now.getTime() + 300_000) })).toMatchObject({ ok: true });
    expect(verify(current.secret, { at: new Date(now.getTime() + 30_000), tolerance: 10 })).toEqual({ ok: false, reason: 'timestamp_outside_tolerance' });
  });

  it('refuses malformed, missing and repeated signature headers', () => {
    const keys = [current];
    const opts = { keys, toleranceSeconds: 300, now };
    expect(verifyDelivery(profile, {}, body, opts)).toEqual({ ok: false, reason: 'malformed' });
    expect(verifyDelivery(profile, { 'stripe-signature': 'v1=abc' }, body, opts)).toEqual({ ok: false, reason: 'malformed' });
    expect(verifyDelivery(profile, { 'stripe-signature': ['t=1,v1=' + 'a'.repeat(64), 't=1,v1=' + 'a'.repeat(64)] }, body, opts)).toEqual({ ok: false, reason: 'malformed' });
    const headers = signDelivery(profile, current.secret, body, { timestamp: ts });
    expect(verifyDelivery(profile, { 'Stripe-Signature': headers['stripe-signature'] }, body, opts)).toMatchObject({ ok: true });
  });

  it('accepts any of several signatures in one header (a sender mid-rotation)', () => {
    const one = signDelivery(profile, 'whsec_unknown', body, { timestamp: ts })['stripe-signature'];
    const two = signDelivery(profile, current.secret, body, { timestamp: ts })['stripe-signature'];
    const header = `${one},${two.split(',')[1]}`;
    expect(verifyDelivery(profile, { 'stripe-signature': header }, body, { keys: [current], toleranceSeconds: 300, now })).toMatchObject({ ok: true, key_version: 2 });
  });

  it('a profile without a signed timestamp ignores the tolerance', () => {
    const github = signatureProfile('vendor_b_sha256')!;
    const headers = signDelivery(github, current.secret, body);
    expect(verifyDelivery(github, headers, body, { keys: [current], toleranceSeconds: 1, now })).toEqual({ ok: true, trust: 'vendor_signed', key_version: 2, timestamp: null });
  });

  it('broker profiles establish broker_attested, never vendor_signed', () => {
    for (const name of ['broker_a_sha256', 'broker_b_sha256']) {
      const broker = signatureProfile(name)!;
      const result = verifyDelivery(broker, signDelivery(broker, current.secret, body), body, { keys: [current], toleranceSeconds: 300, now });
      expect(result).toMatchObject({ ok: true, trust: 'broker_attested' });
    }
  });
});

describe('usableKeys', () => {
  const now = new Date('2026-03-01T12:00:00Z');
  it('keeps the current key and only the next older one', () => {
    const k1 = key(1, 'a', new Date(now.getTime() - 3 * DAY), new Date(now.getTime() + DAY));
    const k2 = key(2, 'b', new Date(now.getTime() - 2 * HOUR), new Date(now.getTime() + DAY));
    const k3 = key(3, 'c', new Date(now.getTime() - HOUR), new Date(now.getTime() + DAY));
    expect(usableKeys([k1, k2, k3], now).map((k) => k.key_version)).toEqual([3, 2]);
    expect(usableKeys([], now)).toEqual([]);
  });
});
