import canonicalize from 'canonicalize';
import fc from 'fast-check';
import { createHash } from 'node:crypto';
import { canonicalJson } from 'src/common/crypto/crypto';

/** Keys a JavaScript object enumerates out of insertion order (integer-like), beside ordinary and non-ASCII ones. */
const key = fc.oneof(fc.constantFrom('0', '1', '9', '10', '2', '4294967294', '4294967295', '01', '-1', '1.5', 'a', 'A', 'é', '\u{1F600}', ''), fc.string());
/** I-JSON values: finite numbers (the ES serialization RFC 8785 prescribes), well-formed strings. */
const document = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    fc.double({ noNaN: true, noDefaultInfinity: true }).map((n) => (Object.is(n, -0) ? 0 : n)),
    fc.integer(),
    fc.string({ unit: 'grapheme' }),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(key, tie('value'), { maxKeys: 6 }),
  ),
})).value;

describe('canonicalJson', () => {
  it('sorts integer-like keys as strings, by UTF-16 code units, at every depth', () => {
    expect(canonicalJson({ '10': 1, '9': 2, a: 3 })).toBe('{"10":1,"9":2,"a":3}');
    expect(canonicalJson({ models: { '9': { b: 1, '10': 2 }, '10': [{ '2': 0, '11': 0 }] } })).toBe('{"models":{"10":[{"11":0,"2":0}],"9":{"10":2,"b":1}}}');
  });

  it('writes what JSON.stringify writes for the values it does not reorder', () => {
    expect(canonicalJson({ b: undefined, a: [undefined, new Date(0)], s: 'é\n"' })).toBe('{"a":[null,"1970-01-01T00:00:00.000Z"],"s":"é\\n\\""}');
  });

  it('agrees with an independent RFC 8785 implementation (canonicalize) over generated documents, bytes and digest', () => {
    fc.assert(
      fc.property(document, (value) => {
        const ours = canonicalJson(value);
        const theirs = canonicalize(value)!;
        expect(ours).toBe(theirs);
        expect(createHash('sha256').update(ours).digest('hex')).toBe(createHash('sha256').update(theirs).digest('hex'));
      }),
      { numRuns: 2000 },
    );
  });
});
