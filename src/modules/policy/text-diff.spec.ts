import { diffBudget, MAX_DIFF_CELLS, unifiedDiff } from 'src/modules/policy/text-diff';

const lines = (count: number, tag: string) => Array.from({ length: count }, (_, i) => `// ${tag} ${i % 7}`);
/** The edit lines of a unified diff by kind. */
const tally = (diff: string) => {
  const body = diff.split('\n').filter((l) => l !== '' && !l.startsWith('@@'));
  return { kept: body.filter((l) => l.startsWith(' ')).length, removed: body.filter((l) => l.startsWith('-')).length, added: body.filter((l) => l.startsWith('+')).length };
};

describe('unifiedDiff bounds', () => {
  it('stays minimal inside the budget, the common head and tail costing nothing', () => {
    const before = ['permit (principal, action, resource)', ...lines(5000, 'a'), 'when { true };'];
    const after = ['forbid (principal, action, resource)', ...lines(5000, 'a'), 'when { true };'];
    const budget = diffBudget();
    expect(unifiedDiff(before.join('\n'), after.join('\n'), budget)).toBe(['@@ -1,4 +1,4 @@', '-permit (principal, action, resource)', '+forbid (principal, action, resource)', ' // a 0', ' // a 1', ' // a 2', ''].join('\n'));
    expect(budget.cells).toBe(MAX_DIFF_CELLS - 4);
  });

  it('answers a changed middle that would overrun the budget coarsely: removed and added whole, still a valid diff', () => {
    // A changed middle of 2,901 x 2,901 lines: 8.4e6 cells, over the budget; a minimal diff would keep most lines.
    const before = ['head', ...lines(3000, 'x'), 'tail'].join('\n');
    const after = ['head', ...lines(3000, 'x').map((l, i) => (i % 100 === 0 ? `${l}!` : l)), 'tail'].join('\n');
    const diff = unifiedDiff(before, after);
    expect(diff.startsWith('@@ -1,2905 +1,2905 @@\n head\n-// x 0\n')).toBe(true);
    expect(tally(diff)).toEqual({ kept: 4, removed: 2901, added: 2901 });
  });

  it('shares one budget across the statements of a request: the later ones turn coarse once it is spent', () => {
    const budget = diffBudget();
    // Every other line changed, the last one kept: a changed middle of 899 x 899 lines, 810,000 cells.
    const before = lines(900, 'y').join('\n');
    const after = lines(900, 'y').map((l, i) => (i % 2 ? l : `${l}.`)).join('\n');
    const minimal = unifiedDiff(before, after, budget);
    expect(tally(minimal)).toEqual({ kept: 450, removed: 450, added: 450 });
    expect(unifiedDiff(before, after, budget)).toBe(minimal);
    expect(budget.cells).toBe(MAX_DIFF_CELLS - 2 * 810_000);
    expect(tally(unifiedDiff(before, after, budget))).toEqual({ kept: 1, removed: 899, added: 899 });
  });

  it('diffs two statements of 87,000 comment lines in bounded time and memory', () => {
    const before = ['permit (principal, action, resource)', ...lines(87_000, 'c'), ';'].join('\n');
    const after = ['permit (principal, action, resource)', ...lines(87_000, 'c').reverse(), ';'].join('\n');
    const started = performance.now();
    const diff = unifiedDiff(before, after);
    // Linear: well under a second on a quiet machine (bench/policy-diff.ts); the old O(n*m) table would need 7.6e9 cells (30 GB).
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(tally(diff).removed + tally(diff).kept).toBeGreaterThan(0);
  });
});
