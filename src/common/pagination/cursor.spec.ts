import fc from 'fast-check';
import { createHash, randomBytes } from 'node:crypto';
import { CURSOR_MAX_LENGTH, cursorMac, decodeCursor, encodeCursor, useCursorKeys } from 'src/common/pagination/cursor';

const SCHEMA = { at: 'timestamp', id: 'string', n: 'int' } as const;
const value = fc.record({
  at: fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2999-12-31T23:59:59Z'), noInvalidDate: true }).map((d) => d.toISOString()),
  id: fc.string({ minLength: 1, maxLength: 40 }),
  n: fc.integer(),
});

const KEY = randomBytes(32);
const SCOPE = 'audit:ws_1';

describe('cursor codec', () => {
  beforeAll(() => useCursorKeys([KEY]));
  it('round-trips every valid key set', () => {
    fc.assert(
      fc.property(value, (v) => {
        const text = encodeCursor(SCHEMA, SCOPE, v);
        expect(text).toMatch(/^[A-Za-z0-9_-]+$/);
        expect(decodeCursor(SCHEMA, SCOPE, text)).toEqual({ v: 2, ...v });
      }),
    );
  });

  it('rejects every mutation of a valid cursor or decodes it to the same key set', () => {
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=+/. ';
    fc.assert(
      fc.property(
        value,
        fc.nat(),
        fc.constantFrom('replace', 'insert', 'delete'),
        fc.constantFrom(...alphabet.split('')),
        (v, position, kind, ch) => {
          const text = encodeCursor(SCHEMA, SCOPE, v);
          const i = position % text.length;
          const mutated =
            kind === 'replace' ? text.slice(0, i) + ch + text.slice(i + 1) : kind === 'insert' ? text.slice(0, i) + ch + text.slice(i) : text.slice(0, i) + text.slice(i + 1);
          const decoded = decodeCursor(SCHEMA, SCOPE, mutated);
          if (decoded !== null) expect(decoded).toEqual({ v: 2, ...v });
        },
      ),
      { numRuns: 2000 },
    );
  });

  /** A cursor from hand-written JSON (an object), with a MAC under `key` over the text as written. */
  const raw = (json: string, key = KEY, scope = SCOPE) =>
    Buffer.from(json.startsWith('{') ? `${json.slice(0, -1)},"c":"${cursorMac(key, scope, json)}"}` : json).toString('base64url');

  it('refuses a cursor forged without the key, or issued for another scope', () => {
    const at = '2026-01-01T00:00:00.000Z';
    const json = `{"v":2,"at":"${at}","id":"a","n":1}`;
    expect(decodeCursor(SCHEMA, SCOPE, raw(json))).toEqual({ v: 2, at, id: 'a', n: 1 });
    expect(decodeCursor(SCHEMA, SCOPE, raw(json, randomBytes(32)))).toBeNull();
    expect(decodeCursor(SCHEMA, 'audit:ws_2', raw(json))).toBeNull();
    expect(decodeCursor(SCHEMA, 'approvals:ws_1', raw(json))).toBeNull();
    // The checksum of the former format (sha256 of the text, no key) no longer passes.
    const unkeyed = `${json.slice(0, -1)},"c":"${createHash('sha256').update(json).digest('hex').slice(0, 32)}"}`;
    expect(decodeCursor(SCHEMA, SCOPE, Buffer.from(unkeyed).toString('base64url'))).toBeNull();
  });

  it('verifies cursors signed with a previous key after a rotation, and signs with the newest', () => {
    const previous = encodeCursor(SCHEMA, SCOPE, { at: '2026-01-01T00:00:00.000Z', id: 'a', n: 1 });
    const next = randomBytes(32);
    useCursorKeys([next, KEY]);
    try {
      expect(decodeCursor(SCHEMA, SCOPE, previous)).not.toBeNull();
      const json = `{"v":2,"at":"2026-01-01T00:00:00.000Z","id":"a","n":1}`;
      expect(encodeCursor(SCHEMA, SCOPE, { at: '2026-01-01T00:00:00.000Z', id: 'a', n: 1 })).toBe(raw(json, next));
      useCursorKeys([next]);
      expect(decodeCursor(SCHEMA, SCOPE, previous)).toBeNull();
    } finally {
      useCursorKeys([KEY]);
    }
  });

  it('rejects duplicate keys, wrong key sets, wrong versions and wrong types', () => {
    const at = '2026-01-01T00:00:00.000Z';
    expect(decodeCursor(SCHEMA, SCOPE, raw(`{"v":2,"at":"${at}","id":"a","n":1}`))).not.toBeNull();
    for (const json of [
      `{"v":2,"at":"${at}","id":"a","id":"b","n":1}`,
      `{"v":2,"at":"${at}","id":"a"}`,
      `{"v":2,"at":"${at}","id":"a","n":1,"x":2}`,
      `{"v":1,"at":"${at}","id":"a","n":1}`,
      `{"v":3,"at":"${at}","id":"a","n":1}`,
      `{"at":"${at}","id":"a","n":1}`,
      `{"v":2,"at":"yesterday","id":"a","n":1}`,
      `{"v":2,"at":"${at}","id":"","n":1}`,
      `{"v":2,"at":"${at}","id":"a","n":1.5}`,
      `{"v":2,"at":"${at}","id":7,"n":1}`,
      `{"v":2, "at":"${at}","id":"a","n":1}`,
      `{"v":2,"id":"a","at":"${at}","n":1}`,
      `{"v":2,"at":"${at}","id":"a","n":1,"c":"00000000000000000000000000000000"}`,
      `[1,2]`,
      `null`,
      `not json`,
    ]) {
      expect(decodeCursor(SCHEMA, SCOPE, raw(json))).toBeNull();
    }
  });

  it('rejects padding, foreign alphabets, empty and oversize input', () => {
    const text = encodeCursor(SCHEMA, SCOPE, { at: '2026-01-01T00:00:00.000Z', id: 'a', n: 1 });
    expect(decodeCursor(SCHEMA, SCOPE, `${text}=`)).toBeNull();
    expect(decodeCursor(SCHEMA, SCOPE, text.replace(/-/g, '+').replace(/_/g, '/') + '+')).toBeNull();
    expect(decodeCursor(SCHEMA, SCOPE, '')).toBeNull();
    const long = encodeCursor({ id: 'string' }, SCOPE, { id: 'x'.repeat(CURSOR_MAX_LENGTH) });
    expect(decodeCursor({ id: 'string' }, SCOPE, long)).toBeNull();
  });
});
