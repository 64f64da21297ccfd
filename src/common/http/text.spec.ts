import { inputFault, isStorableText, MAX_JSON_DEPTH } from 'src/common/http/text';

describe('isStorableText', () => {
  it('refuses a NUL and an unpaired surrogate of either half, anywhere; takes any other text', () => {
    for (const text of ['\u0000', 'a\u0000', '\ud800', 'x\ud800y', '\udfff', 'a\udc00', '\udc00\ud800']) expect([text, isStorableText(text)]).toEqual([text, false]);
    for (const text of ['', 'plain', '\u0001\u001f\u007f', 'é', '💥', '\ud83d\udca5', '\ufffd', 'a'.repeat(100_000)]) expect([text, isStorableText(text)]).toEqual([text, true]);
  });
});

describe('inputFault', () => {
  it('finds unstorable text in strings and object keys at any depth, with its path', () => {
    expect(inputFault({ a: [1, { b: 'ok' }, { c: 'x\u0000' }] })).toEqual({ loc: ['a', 2, 'c'], kind: 'text' });
    expect(inputFault({ a: { 'k\ud800': 1 } })).toEqual({ loc: ['a', 'k\ud800'], kind: 'text' });
    expect(inputFault('\u0000')).toEqual({ loc: [], kind: 'text' });
    expect(inputFault({ a: [null, true, 1.5, 'fine', { b: ['x'] }] })).toBeNull();
  });

  it('refuses a container nested deeper than MAX_JSON_DEPTH at its path, without recursing further', () => {
    let deep: unknown = 'leaf';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(inputFault({ a: deep })).toEqual({ loc: ['a', ...Array(MAX_JSON_DEPTH - 1).fill(0)], kind: 'depth' });
    let allowed: unknown = 'leaf';
    for (let i = 0; i < MAX_JSON_DEPTH; i++) allowed = [allowed];
    expect(inputFault(allowed)).toBeNull();
  });
});
