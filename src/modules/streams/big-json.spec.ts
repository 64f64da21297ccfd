import { parseJsonLossless, stringifyJson } from 'src/modules/streams/big-json';

describe('lossless JSON', () => {
  it('keeps integers beyond 2^53 exact as decimal strings and leaves the rest alone', () => {
    const text = '{"a":9007199254740993,"b":-12345678901234567890,"c":42,"d":1.5e300,"e":"9007199254740993","f":[18446744073709551615],"g":"say \\"1234567890123456789\\""}';
    expect(parseJsonLossless(text)).toEqual({
      a: '9007199254740993',
      b: '-12345678901234567890',
      c: 42,
      d: 1.5e300,
      e: '9007199254740993',
      f: ['18446744073709551615'],
      g: 'say "1234567890123456789"',
    });
  });

  it('reads text without any long digit run exactly as JSON.parse does', () => {
    const text = '{"a":123456789012345,"b":-1.5e3,"c":"2026-01-01T00:00:00.000Z","d":[0,null,true]}';
    expect(parseJsonLossless(text)).toEqual(JSON.parse(text));
  });

  it('rejects what JSON.parse rejects', () => {
    expect(() => parseJsonLossless('{"a":')).toThrow();
    expect(() => parseJsonLossless('not json')).toThrow();
  });

  it('writes bigints as exact JSON integers, even inside strings that look like markers', () => {
    const text = stringifyJson({ n: 2n ** 63n - 1n, m: -5n, s: 'big0000:1', list: [1n, 'x'] });
    expect(text).toBe('{"n":9223372036854775807,"m":-5,"s":"big0000:1","list":[1,"x"]}');
  });
});
