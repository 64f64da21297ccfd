import { compileCondition } from 'src/modules/workers/definitions/condition';

describe('step condition compiler (CEL)', () => {
  it.each([
    'true',
    'input.priority == "high"',
    'steps.review.output.approved && size(input.files) > 0',
    'input.items.exists(i, i.amount > 100)',
    'input.labels.all(l, l.startsWith("bug"))',
    '{"a": input.x}["a"] in [1, 2, 3]',
    'has(steps.fetch.output) ? steps.fetch.output.count >= 3 : false',
  ])('compiles %s', (text) => {
    expect(compileCondition(text)).toBeNull();
  });

  it.each([
    ['input.x >', /^condition does not parse: /],
    ['1 +', /^condition does not parse: /],
    ['env.secret == "x"', /^unknown variable env; use input or steps$/],
    ['input.items.exists(i, j > 1)', /^unknown variable j/],
    ['shell("rm -rf /")', /^unknown function shell$/],
  ])('refuses %s', (text, reason) => {
    expect(compileCondition(text)).toMatch(reason);
  });
});
