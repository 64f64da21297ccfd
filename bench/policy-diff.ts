/**
 * Policy diff bound benchmark: `NODE_PATH=. node --expose-gc -r ts-node/register/transpile-only bench/policy-diff.ts`.
 * The worst diff request the bound allows (one statement whose changed middle fills MAX_DIFF_CELLS,
 * every line distinct and every other one changed, so the table is filled and walked in full), and
 * the case of issue 29 (a statement of 87,000 comment lines against a similar one), answered
 * coarsely. Reports the main-thread time of `unifiedDiff` (median of BENCH_ITERATIONS, default 5)
 * and the heap and external memory it adds (typed arrays are external), beside the floor any line
 * diff of the large case pays (split both texts, write every line once). No database needed.
 */
import { loadavg } from 'node:os';
import { diffBudget, MAX_DIFF_CELLS, unifiedDiff } from 'src/modules/policy/text-diff';

const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 5);
const gc = (globalThis as { gc?: () => void }).gc ?? (() => undefined);

/** The floor any line diff pays: split both texts and write every line of both back out once. */
const floor = (before: string, after: string) => [...before.split('\n').map((l) => `-${l}`), ...after.split('\n').map((l) => `+${l}`)].join('\n');

function measure(name: string, before: string, after: string, run: (before: string, after: string) => string = (b, a) => unifiedDiff(b, a, diffBudget())) {
  const times: number[] = [];
  let peak = 0;
  let size = 0;
  for (let i = 0; i < ITERATIONS; i++) {
    gc();
    const base = process.memoryUsage();
    const started = performance.now();
    const diff = run(before, after);
    times.push(performance.now() - started);
    const used = process.memoryUsage();
    peak = Math.max(peak, used.heapUsed + used.external + used.arrayBuffers - base.heapUsed - base.external - base.arrayBuffers);
    size = diff.length;
  }
  times.sort((a, b) => a - b);
  console.log(`| ${name} | ${before.split('\n').length} x ${after.split('\n').length} | ${times[Math.floor(times.length / 2)].toFixed(0)} | ${times[times.length - 1].toFixed(0)} | ${(peak / 1e6).toFixed(0)} | ${(size / 1e3).toFixed(0)} |`);
}

const side = Math.floor(Math.sqrt(MAX_DIFF_CELLS)) - 1;
const distinct = Array.from({ length: side }, (_, i) => `  context.line_${i} == "value ${i}" &&`);
console.log(`${new Date().toISOString()}, node ${process.version}, MAX_DIFF_CELLS ${MAX_DIFF_CELLS}, load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
console.log('\n| Case | lines | median ms | max ms | memory added MB (upper bound) | diff kB |\n|---|---|---|---|---|---|');
measure('largest minimal diff allowed', distinct.join('\n'), distinct.map((l, i) => (i % 2 ? l : `${l} // changed`)).join('\n'));
const comments = (tag: string) => Array.from({ length: 87_000 }, (_, i) => `// ${tag} ${i}`);
const [big, bigAfter] = [['permit (principal, action, resource)', ...comments('a'), ';'].join('\n'), ['permit (principal, action, resource)', ...comments('b'), ';'].join('\n')];
measure('87,000 comment lines, coarse', big, bigAfter);
measure('floor: split and write both once', big, bigAfter, floor);
console.log(`\nload average after: ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
