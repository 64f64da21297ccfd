import { splitPolicies } from 'src/modules/policy/policy-source';
import { unifiedDiff } from 'src/modules/policy/text-diff';

describe('splitPolicies', () => {
  it('splits at semicolons outside strings and comments, with ids, lines and columns', () => {
    const source = [
      '// a comment; not a statement',
      '@id("allow-dev") permit (principal, action, resource) when { context.env == "a;b\\"c" };',
      '  forbid (principal, action, resource) // trailing; comment',
      '  when { resource.name like "é😀*" };',
      '@id("allow-dev") permit (principal, action, resource);',
      '😀 permit (principal, action, resource);',
    ].join('\n');
    expect(splitPolicies(source)).toEqual([
      { id: 'allow-dev', cedarId: 'policy0', text: expect.stringMatching(/^@id\("allow-dev"\) permit .*"a;b\\"c" };$/), line: 2, column: 1 },
      { id: 'policy1', cedarId: 'policy1', text: expect.stringMatching(/^forbid [\s\S]*"é😀\*" };$/), line: 3, column: 3 },
      // A repeated @id keeps the first; the later one is known by its position.
      { id: 'policy2', cedarId: 'policy2', text: '@id("allow-dev") permit (principal, action, resource);', line: 5, column: 1 },
      { id: 'policy3', cedarId: 'policy3', text: '😀 permit (principal, action, resource);', line: 6, column: 1 },
    ]);
  });

  it('keeps trailing text without a semicolon as a last statement and ignores trailing comments', () => {
    expect(splitPolicies('permit (principal, action, resource);\n// end\n').map((s) => s.text)).toEqual(['permit (principal, action, resource);']);
    expect(splitPolicies('permit (principal, action, resource);\nforbid (principal\n').map((s) => s.text)).toEqual([
      'permit (principal, action, resource);',
      'forbid (principal',
    ]);
    expect(splitPolicies('')).toEqual([]);
  });
});

describe('unifiedDiff', () => {
  it('is empty for equal texts', () => {
    expect(unifiedDiff('a\nb', 'a\nb')).toBe('');
  });

  it('writes hunks with three lines of context as diff -u does', () => {
    const before = ['1', '2', '3', '4', '5', '6', '7', '8', '9', '10', '11', '12'].join('\n');
    const after = ['1', 'two', '3', '4', '5', '6', '7', '8', '9', '10', '11', '12', '13'].join('\n');
    expect(unifiedDiff(before, after)).toBe(['@@ -1,5 +1,5 @@', ' 1', '-2', '+two', ' 3', ' 4', ' 5', '@@ -10,3 +10,4 @@', ' 10', ' 11', ' 12', '+13', ''].join('\n'));
  });

  it('joins changes six unchanged lines apart into one hunk and splits them at seven, as diff -u does', () => {
    const middle = (n: number) => Array.from({ length: n }, (_, i) => `${i + 1}`);
    const six = unifiedDiff(['x', ...middle(6), 'y'].join('\n'), ['X', ...middle(6), 'Y'].join('\n'));
    expect(six).toBe(['@@ -1,8 +1,8 @@', '-x', '+X', ...middle(6).map((l) => ` ${l}`), '-y', '+Y', ''].join('\n'));
    const seven = unifiedDiff(['x', ...middle(7), 'y'].join('\n'), ['X', ...middle(7), 'Y'].join('\n'));
    expect(seven).toBe(['@@ -1,4 +1,4 @@', '-x', '+X', ' 1', ' 2', ' 3', '@@ -6,4 +6,4 @@', ' 5', ' 6', ' 7', '-y', '+Y', ''].join('\n'));
  });

  it('reports a whole replacement', () => {
    expect(unifiedDiff('permit (principal, action, resource);', 'forbid (principal, action, resource);')).toBe(
      '@@ -1 +1 @@\n-permit (principal, action, resource);\n+forbid (principal, action, resource);\n',
    );
  });
});
