import { arrayLiteral } from 'src/modules/streams/array-literal';

describe('arrayLiteral', () => {
  it('quotes every string, escapes quotes and backslashes, and writes null as NULL', () => {
    expect(arrayLiteral(['a', 'a"b\\c', '', 'NULL', ' x, {y} ', null, 'é😀'])).toBe('{"a","a\\"b\\\\c","","NULL"," x, {y} ",NULL,"é😀"}');
  });

  it('writes numbers and booleans bare', () => {
    expect(arrayLiteral([1, 0, true, false, null])).toBe('{1,0,true,false,NULL}');
    expect(arrayLiteral([])).toBe('{}');
  });
});
