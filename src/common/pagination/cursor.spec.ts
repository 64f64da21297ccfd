import fc from 'fast-check';
import { CURSOR_MAX_LENGTH, cursorChecksum, decodeCursor, encodeCursor } from 'src/common/pagination/cursor';

const SCHEMA = { at: 'timestamp', id: 'string', n: 'int' } as const;
const value = fc.record({
  at: fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2999-12-31T23:59:59Z'), noInvalidDate: true }).map((d) => d.toISOString()),
  id: fc.string({ minLength: 1, maxLength: 40 }),
  n: fc.integer(),
});

describe('cursor codec', () => {
  it('round-trips every valid key set', () => {
    fc.assert(
      fc.property(value, (v) => {
        const text = encodeCursor(SCHEMA, v);
        expect(text).toMatch(/^[A-Za-z0-9_-]+$/);
        expect(decodeCursor(SCHEMA, text)).toEqual({ v: 1, ...v });
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
          const text = encodeCursor(SCHEMA, v);
          const i = position % text.length;
          const mutated =
            kind === 'replace' ? text.slice(0, i) + ch + text.slice(i + 1) : kind === 'insert' ? text.slice(0, i) + ch + text.slice(i) : text.slice(0, i) + text.slice(i + 1);
          const decoded = decodeCursor(SCHEMA, mutated);
          if (decoded !== null) expect(decoded).toEqual({ v: 1, ...v });
        },
      ),
      { numRuns: 2000 },
    );
  });

  /** A cursor from hand-written JSON (an object), with a checksum over the text as written. */
  const raw = (json: string) =>
    Buffer.from(json.startsWith('{') ? `${json.slice(0, -1)},"c":"${cursorChecksum(json)}"}` : json).toString('base64url');

  it('rejects duplicate keys, wrong key sets, wrong versions and wrong types', () => {
    const at = '2026-01-01T00:00:00.000Z';
    expect(decodeCursor(SCHEMA, raw(`{"v":1,"at":"${at}","id":"a","n":1}`))).not.toBeNull();
    for (const json of [
      `{"v":1,"at":"${at}","id":"a","id":"b","n":1}`,
      `{"v":1,"at":"${at}","id":"a"}`,
      `{"v":1,"at":"${at}","id":"a","n":1,"x":2}`,
      `{"v":2,"at":"${at}","id":"a","n":1}`,
      `{"at":"${at}","id":"a","n":1}`,
      `{"v":1,"at":"yesterday","id":"a","n":1}`,
      `{"v":1,"at":"${at}","id":"","n":1}`,
      `{"v":1,"at":"${at}","id":"a","n":1.5}`,
      `{"v":1,"at":"${at}","id":7,"n":1}`,
      `{"v":1, "at":"${at}","id":"a","n":1}`,
      `{"v":1,"id":"a","at":"${at}","n":1}`,
      `{"v":1,"at":"${at}","id":"a","n":1,"c":"0000000000000000"}`,
      `[1,2]`,
      `null`,
      `not json`,
    ]) {
      expect(decodeCursor(SCHEMA, raw(json))).toBeNull();
    }
  });

  it('rejects padding, foreign alphabets, empty and oversize input', () => {
    const text = encodeCursor(SCHEMA, { at: '2026-01-01T00:00:00.000Z', id: 'a', n: 1 });
    expect(decodeCursor(SCHEMA, `${text}=`)).toBeNull();
    expect(decodeCursor(SCHEMA, text.replace(/-/g, '+').replace(/_/g, '/') + '+')).toBeNull();
    expect(decodeCursor(SCHEMA, '')).toBeNull();
    const long = encodeCursor({ id: 'string' }, { id: 'x'.repeat(CURSOR_MAX_LENGTH) });
    expect(decodeCursor({ id: 'string' }, long)).toBeNull();
  });
});
