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

  it('reports a whole replacement', () => {
    expect(unifiedDiff('permit (principal, action, resource);', 'forbid (principal, action, resource);')).toBe(
      '@@ -1 +1 @@\n-permit (principal, action, resource);\n+forbid (principal, action, resource);\n',
    );
  });
});
