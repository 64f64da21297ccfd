type Edit = { op: ' ' | '-' | '+'; line: string };

/** The line edits turning `a` into `b` along a longest common subsequence (O(n*m); policies are short). */
function edits(a: string[], b: string[]): Edit[] {
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
 * texts are equal.
 */
export function unifiedDiff(before: string, after: string, context = 3): string {
  const script = edits(before.split('\n'), after.split('\n'));
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
