/**
 * Policy benchmark: `NODE_PATH=. node -r ts-node/register/transpile-only bench/policy.ts`.
 * 1. Compile latency through the seam (worker thread, strict validation against the gateway
 *    schema) for the default policy and a maximum-size (262144-byte) policy.
 * 2. Publishes per second through the API (one operator, sequential: PUT a new draft untimed, then
 *    the timed three-phase publish, which also republishes the snapshot after commit).
 * Each row sits beside the raw cedar-wasm parse time (`checkParsePolicySet`, main thread) of the
 * same source measured in the same run. Needs the PostgreSQL and Redis of `npm test`.
 * BENCH_ITERATIONS (default 50) sets the samples per row.
 */
import { checkParsePolicySet } from '@cedar-policy/cedar-wasm/nodejs';
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { DEFAULT_POLICY } from 'src/modules/policy/dto/policy.document';
import { PolicyCompiler } from 'src/modules/policy/policy.compiler';
import { operatorApi, startBenchApp } from 'bench/in-process-app';
import { percentile } from 'bench/stats';

const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 50);
const PORT = 3902;
const sha = (text: string) => `sha256:${createHash('sha256').update(text, 'utf8').digest('hex')}`;

function largePolicy(bytes: number, salt = ''): string {
  const rule = `permit (principal, action == Gateway::Action::"tool.call", resource) when { context.env == "prod" && resource.name like "*a*" };\n`;
  const head = `// ${salt}\n`;
  return head + rule.repeat(Math.floor((bytes - Buffer.byteLength(head)) / Buffer.byteLength(rule)));
}


async function timed(times: number, work: (i: number) => Promise<unknown> | unknown): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < times; i++) {
    const start = performance.now();
    await work(i);
    samples.push(performance.now() - start);
  }
  return samples;
}

function rawParse(source: string): number[] {
  const samples: number[] = [];
  for (let i = 0; i < ITERATIONS; i++) {
    const start = performance.now();
    if (checkParsePolicySet({ staticPolicies: source }).type !== 'success') throw new Error('bench policy does not parse');
    samples.push(performance.now() - start);
  }
  return samples;
}

async function main(): Promise<void> {
  const rows: string[] = [];
  const fmt = (ms: number) => ms.toFixed(2);
  const sources: [string, (i: number) => string][] = [
    ['default policy', (i) => `${DEFAULT_POLICY}// ${i}\n`],
    ['262144-byte policy', (i) => largePolicy(262144, String(i))],
  ];

  const compiler = new PolicyCompiler(1);
  for (const [name, source] of sources) {
    await compiler.compile(source(0)); // warm the worker
    const seam = await timed(ITERATIONS, (i) => compiler.compile(source(i)));
    const raw = rawParse(source(0));
    rows.push(`| compile, ${name} | ${fmt(percentile(seam, 50))} ms | ${fmt(percentile(seam, 99))} ms | ${fmt(percentile(raw, 50))} ms |`);
  }
  await compiler.close();

  const bench = await startBenchApp(PORT);
  const { close } = bench;
  try {
    const { call, ws } = await operatorApi(bench, 'bench-policy');
    let revision: string | null = null;
    for (const [name, source] of sources) {
      const drafts = Array.from({ length: ITERATIONS + 1 }, (_, i) => source(i + 1));
      const publishOnce = async (i: number) => {
        await call('PUT', `/workspaces/${ws}/policy`, { cedar_text: drafts[i] });
        const start = performance.now();
        const result = await call('POST', `/workspaces/${ws}/policy/publish`, { expected_draft_hash: sha(drafts[i]), expected_revision_id: revision });
        const elapsed = performance.now() - start;
        revision = result.revision_id as string;
        return elapsed;
      };
      await publishOnce(ITERATIONS); // warm-up
      const samples: number[] = [];
      for (let i = 0; i < ITERATIONS; i++) samples.push(await publishOnce(i));
      const perSecond = (samples.length * 1000) / samples.reduce((a, b) => a + b, 0);
      const raw = rawParse(drafts[0]);
      rows.push(`| publish, ${name}: ${perSecond.toFixed(1)}/s | ${fmt(percentile(samples, 50))} ms | ${fmt(percentile(samples, 99))} ms | ${fmt(percentile(raw, 50))} ms |`);
    }
  } finally {
    await close();
  }

  process.stdout.write(
    [
      `${new Date().toISOString()}, ${ITERATIONS} samples per row, node ${process.version}`,
      '',
      '| Measure | p50 | p99 | raw cedar-wasm parse p50 (same source, same run) |',
      '|---|---|---|---|',
      ...rows,
      '',
    ].join('\n'),
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
