/**
 * Policy replay memory benchmark: `NODE_PATH=. node --expose-gc -r ts-node/register/transpile-only bench/policy-replay-memory.ts`.
 * A replay at its largest `limit` (100,000 recorded decisions, every request distinct, 100-policy
 * draft) through the API, against what the replay held before it read page by page: the 100,000
 * recorded rows of one statement, kept alive (the same query without the page position), same run.
 * Reports the heap above the idle application: for the rows, live after a full GC; for the replay,
 * the peak sampled every 5 ms (garbage included, so an upper bound). Run it again under
 * `--max-old-space-size=240` to see the replay complete on a heap the rows alone nearly fill.
 * Needs the PostgreSQL and Redis of `npm test`. BENCH_ITERATIONS (default 2) replays.
 */
import { loadavg } from 'node:os';
import { getHeapStatistics } from 'node:v8';
import { DataSource } from 'typeorm';
import { REPLAY_PAGE } from 'src/modules/policy/policy-replay.service';
import { operatorApi, startBenchApp } from 'bench/in-process-app';
import { draft, request, seedDecisions, timedReplay } from 'bench/replay-seed';

const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 2);
const DECISIONS = 100_000;
const PORT = 3906;

/** The statement of the replay before it paged: every recorded decision of the window at once. */
const ALL_AT_ONCE = `
  SELECT r.receipt_id, r.key_id, r.tool, r.occurred_at, r.envelope->'authorization' AS authorization
  FROM receipt_revisions r
  WHERE r.workspace_id = $1 AND r.occurred_at >= $2 AND r.occurred_at < $3 AND r.envelope ? 'authorization'
    AND NOT EXISTS (SELECT 1 FROM receipt_revisions n WHERE n.workspace_id = r.workspace_id AND n.invocation_id = r.invocation_id
                    AND n.receipt_revision > r.receipt_revision AND n.envelope ? 'authorization')
  ORDER BY r.occurred_at DESC, r.receipt_id DESC
  LIMIT $4`;

const gc = (): void => (global as unknown as { gc?: () => void }).gc?.();
const mib = (bytes: number) => `${(bytes / 1048576).toFixed(0)} MiB`;

async function main(): Promise<void> {
  if (!(global as unknown as { gc?: unknown }).gc) throw new Error('run with node --expose-gc');
  const bench = await startBenchApp(PORT);
  const { app, close } = bench;
  const lines: string[] = [];
  try {
    const { call, ws } = await operatorApi(bench, 'bench-replay-memory');
    const db = app.get(DataSource);
    const now = Date.now();
    for (let at = 0; at < DECISIONS; at += 10_000) {
      await seedDecisions(db, ws, Array.from({ length: 10_000 }, (_, i) => request(ws, at + i, true)), now - at * 1000, `d${at}_`);
    }
    await db.query('ANALYZE receipt_revisions, receipt_heads');
    await call('PUT', `/workspaces/${ws}/policy`, { cedar_text: draft() });
    const window = { from: new Date(now - DECISIONS * 1000).toISOString(), to: new Date(now + 1000).toISOString(), limit: DECISIONS };

    gc();
    const idle = process.memoryUsage().heapUsed;
    let rows: unknown[] | null = await db.query(ALL_AT_ONCE, [ws, window.from, window.to, DECISIONS]);
    gc();
    const held = process.memoryUsage().heapUsed - idle;
    if (rows?.length !== DECISIONS) throw new Error(`read ${rows?.length} rows`);
    rows = null;

    for (let i = 0; i < ITERATIONS; i++) {
      gc();
      const { ms, heap } = await timedReplay(call, ws, window, DECISIONS);
      lines.push(`| replay ${i + 1}: ${(ms / 1000).toFixed(1)} s | peak heap +${mib(heap)} | ${(heap / held).toFixed(2)} of the rows held at once |`);
    }
    lines.unshift(
      `| Replay of ${DECISIONS.toLocaleString('en')} distinct decisions, pages of ${REPLAY_PAGE} | heap above the idle application | ratio |`,
      '|---|---|---|',
      `| ${DECISIONS.toLocaleString('en')} recorded rows of one statement, held | live heap +${mib(held)} | 1.00 |`,
    );
  } finally {
    await close();
  }
  process.stdout.write([`${new Date().toISOString()}, node ${process.version}, heap limit ${mib(getHeapStatistics().heap_size_limit)}, load average ${loadavg()[0].toFixed(1)}`, '', ...lines, ''].join('\n'));
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`bench failed: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
