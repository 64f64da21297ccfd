type Edit = { op: ' ' | '-' | '+'; line: string };

/**
 * Most cells of longest-common-subsequence table one diff request may fill, over all its
 * statements together (4 bytes each: 8 MB at most, about 0.2 s of the main thread on a loaded
 * machine, measured in bench/policy-diff.ts). A statement
 * whose changed middle does not fit in what is left is answered coarsely: its changed middle
 * removed and added whole, still a correct unified diff, in linear time.
 */
export const MAX_DIFF_CELLS = 2_000_000;

/** What is left of a request's MAX_DIFF_CELLS; shared by the diffs of one request. */
export interface DiffBudget {
  cells: number;
}

export const diffBudget = (): DiffBudget => ({ cells: MAX_DIFF_CELLS });

/**
 * The line edits turning `a` into `b`: common leading and trailing lines kept, the middle along a
 * longest common subsequence (O(n*m) of the middle), or replaced whole when that would overrun `budget`.
 */
function edits(a: string[], b: string[], budget: DiffBudget): Edit[] {
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const keep = (lines: string[]): Edit[] => lines.map((line) => ({ op: ' ', line }));
  const [midA, midB] = [a.slice(head, a.length - tail), b.slice(head, b.length - tail)];
  const cells = (midA.length + 1) * (midB.length + 1);
  let middle: Edit[];
  if (cells > budget.cells) {
    middle = [...midA.map((line): Edit => ({ op: '-', line })), ...midB.map((line): Edit => ({ op: '+', line }))];
  } else {
    budget.cells -= cells;
    middle = lcsEdits(midA, midB);
  }
  return [...keep(a.slice(0, head)), ...middle, ...keep(a.slice(a.length - tail))];
}

/** The line edits along a longest common subsequence: O(n*m) time and cells. */
function lcsEdits(a: string[], b: string[]): Edit[] {
  const n = a.length;
  const m = b.length;
  // lcs[i][j]: length of the LCS of a[i..] and b[j..].
  const lcs = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
  }
  const out: Edit[] = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) {
      out.push({ op: ' ', line: a[i] });
      i++;
      j++;
    } else if (i < n && (j === m || lcs[i + 1][j] >= lcs[i][j + 1])) {
      // Deletions before insertions, as diff writes a replaced line.
      out.push({ op: '-', line: a[i++] });
    } else {
      out.push({ op: '+', line: b[j++] });
    }
  }
  return out;
}

const range = (start: number, count: number) => (count === 1 ? `${start}` : `${count === 0 ? start - 1 : start},${count}`);

/**
 * A unified diff of two texts (without the `---`/`+++` header): hunks of changed lines with
 * `context` unchanged lines around them, `@@ -a,b +c,d @@` as `diff -u` writes it. Empty when the
 * texts are equal. Minimal while `budget` lasts, else coarse (see MAX_DIFF_CELLS).
 */
export function unifiedDiff(before: string, after: string, budget: DiffBudget = diffBudget(), context = 3): string {
  const script = edits(before.split('\n'), after.split('\n'), budget);
  const changed = script.flatMap((e, k) => (e.op === ' ' ? [] : [k]));
  if (changed.length === 0) return '';
  // One hunk for changes at most 2 * context unchanged lines apart (their context would meet), as diff -u groups them.
  const hunks: [number, number][] = [];
  for (const k of changed) {
    const last = hunks[hunks.length - 1];
    if (last && k - last[1] - 1 <= 2 * context) last[1] = k;
    else hunks.push([k, k]);
  }
  const lines: string[] = [];
  // Line numbers (1-based) in `before` and `after` of each script position.
  const oldAt: number[] = [];
  const newAt: number[] = [];
  let o = 1;
  let p = 1;
  for (const e of script) {
    oldAt.push(o);
    newAt.push(p);
    if (e.op !== '+') o++;
    if (e.op !== '-') p++;
  }
  for (const [first, last] of hunks) {
    const from = Math.max(0, first - context);
    const to = Math.min(script.length - 1, last + context);
    const slice = script.slice(from, to + 1);
    const oldCount = slice.filter((e) => e.op !== '+').length;
    const newCount = slice.filter((e) => e.op !== '-').length;
    lines.push(`@@ -${range(oldAt[from], oldCount)} +${range(newAt[from], newCount)} @@`);
    for (const e of slice) lines.push(`${e.op}${e.line}`);
  }
  return lines.join('\n') + '\n';
}
