/**
 * Policy replay benchmark: `NODE_PATH=. node -r ts-node/register/transpile-only bench/policy-replay.ts`.
 * 10,000 recorded decisions (receipt revisions carrying `envelope.authorization`, written straight
 * into the read model) replayed against a 100-policy draft, twice over: recorded traffic as it
 * repeats (2,100 distinct requests in 10,000) and a set where every request is distinct:
 * 1. `POST /policy/replay` through the API (read page by page, evaluate in the compiler's workers,
 *    compare), with the heap's growth during the replay;
 * 2. the seam alone (`PolicyCompiler.evaluate` on the distinct requests, one page, no database),
 *    with 2 slots (the default: chunks on both workers) and with 1 (one worker);
 * 3. the limit: cedar-wasm's own `isAuthorized` in one loop on the main thread (it parses the
 *    policy set on every call; timed on 1000 requests and scaled), and `statefulIsAuthorized` on
 *    a policy set parsed once (what the worker runs), same distinct requests and source, same run.
 * Also: how long a compile waits while a replay runs (compiles take the slot of the next chunk to finish).
 * Needs the PostgreSQL and Redis of `npm test`. BENCH_ITERATIONS (default 3) sets the samples per row (medians).
 */
import { isAuthorized, preparsePolicySet, statefulIsAuthorized } from '@cedar-policy/cedar-wasm/nodejs';
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { DataSource } from 'typeorm';
import { AuthorizationRequest, EVALUATION_CHUNK, pagesOf, PolicyCompiler } from 'src/modules/policy/policy.compiler';
import { operatorApi, startBenchApp } from 'bench/in-process-app';
import { median } from 'bench/stats';
import { draft, POLICIES, request, seedDecisions, timedReplay } from 'bench/replay-seed';

const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 3);
/** `isAuthorized` parses the whole policy set on every call: timed on this many requests, its rate scaled. */
const RAW_SAMPLE = 1000;
const DECISIONS = 10000;
const PORT = 3904;

const rate = (n: number, ms: number) => Math.round((n * 1000) / ms);

async function main(): Promise<void> {
  const source = draft();
  const bench = await startBenchApp(PORT);
  const { app, close } = bench;
  const rows: string[] = [];
  try {
    const { call, ws } = await operatorApi(bench, 'bench-replay');
    // The repeating set is the last DECISIONS seconds; the distinct set the same span a day earlier.
    const now = Date.now();
    const db = app.get(DataSource);
    const DAY = 86_400_000;
    const requests = Array.from({ length: DECISIONS }, (_, i) => request(ws, i, false));
    const distinctRequests = Array.from({ length: DECISIONS }, (_, i) => request(ws, i, true));
    await seedDecisions(db, ws, requests, now, 'bench');
    await seedDecisions(db, ws, distinctRequests, now - DAY, 'distinct');
    await db.query('ANALYZE receipt_revisions, receipt_heads');
    const windows = {
      repeating: { from: new Date(now - DECISIONS * 1000).toISOString(), to: new Date(now + 1000).toISOString(), limit: DECISIONS },
      distinct: { from: new Date(now - DAY - DECISIONS * 1000).toISOString(), to: new Date(now - DAY + 1000).toISOString(), limit: DECISIONS },
    };

    await call('PUT', `/workspaces/${ws}/policy`, { cedar_text: source });
    // Each replay through the API, with the growth of the heap above where it started (sampled every 5 ms).
    const replayed = async (window: object) => {
      const samples: number[] = [];
      const peaks: number[] = [];
      for (let i = 0; i <= ITERATIONS; i++) {
        const { ms, heap } = await timedReplay(call, ws, window, DECISIONS);
        if (i === 0) continue; // warm-up
        samples.push(ms);
        peaks.push(heap);
      }
      return { samples, heap: median(peaks) };
    };
    const api = await replayed(windows.repeating);
    const apiDistinct = await replayed(windows.distinct);

    // A compile issued while a replay runs waits at most one chunk (it is never refused: compiles come first).
    const waits: number[] = [];
    for (let i = 0; i < ITERATIONS; i++) {
      const replay = call('POST', `/workspaces/${ws}/policy/replay`, windows.distinct);
      await new Promise((resolve) => setTimeout(resolve, 50));
      const start = performance.now();
      await call('POST', `/workspaces/${ws}/policy/test`, {});
      waits.push(performance.now() - start);
      await replay;
    }

    // The seam with the default POLICY_COMPILER_CONCURRENCY (2: both workers evaluate), and with
    // one slot (one worker: how replay ran before chunks were spread over the slots).
    const shared = [{ uid: { type: 'Gateway::Workspace', id: ws }, attrs: { env: 'dev' }, parents: [] }];
    const seamWith = async (slots: number, set: AuthorizationRequest[]) => {
      const compiler = new PolicyCompiler(slots);
      const samples: number[] = [];
      try {
        await compiler.evaluate('warm', source, shared, pagesOf(set.slice(0, 10)), () => undefined);
        for (let i = 0; i < ITERATIONS; i++) {
          const start = performance.now();
          await compiler.evaluate(`k${i}`, source, shared, pagesOf(set), () => undefined);
          samples.push(performance.now() - start);
        }
      } finally {
        await compiler.close();
      }
      return samples;
    };
    const seam = await seamWith(2, distinctRequests);
    const oneWorker = await seamWith(1, distinctRequests);

    // The limits, on the main thread: `isAuthorized` (the policy set parsed on every call) and
    // `statefulIsAuthorized` on a policy set parsed once (what the worker runs).
    const raw: number[] = [];
    for (let i = 0; i < ITERATIONS; i++) {
      const start = performance.now();
      for (const r of distinctRequests.slice(0, RAW_SAMPLE)) {
        const answer = isAuthorized({ principal: r.principal, action: r.action, resource: r.resource, context: r.context as never, entities: [...r.entities, ...shared] as never, policies: { staticPolicies: source } });
        if (answer.type !== 'success') throw new Error('bench request refused');
      }
      raw.push(((performance.now() - start) * DECISIONS) / RAW_SAMPLE);
    }
    if (preparsePolicySet('bench', { staticPolicies: source }).type !== 'success') throw new Error('bench policy does not parse');
    const stateful: number[] = [];
    for (let i = 0; i < ITERATIONS; i++) {
      const start = performance.now();
      for (const r of distinctRequests) {
        const answer = statefulIsAuthorized({ principal: r.principal, action: r.action, resource: r.resource, context: r.context as never, entities: [...r.entities, ...shared] as never, preparsedPolicySetId: 'bench' });
        if (answer.type !== 'success') throw new Error('bench request refused');
      }
      stateful.push(performance.now() - start);
    }

    const testAlone: number[] = [];
    for (let i = 0; i < ITERATIONS; i++) {
      const start = performance.now();
      await call('POST', `/workspaces/${ws}/policy/test`, {});
      testAlone.push(performance.now() - start);
    }

    const row = (name: string, samples: number[]) =>
      `| ${name} | ${median(samples).toFixed(0)} ms | ${rate(DECISIONS, median(samples))}/s | ${(median(raw) / median(samples)).toFixed(2)} | ${(median(stateful) / median(samples)).toFixed(2)} |`;
    const mib = (bytes: number) => `${(bytes / 1048576).toFixed(0)} MiB`;
    rows.push(row(`\`POST /policy/replay\`, recorded traffic (2,100 distinct requests; heap +${mib(api.heap)})`, api.samples));
    rows.push(row(`\`POST /policy/replay\`, every request distinct (heap +${mib(apiDistinct.heap)})`, apiDistinct.samples));
    rows.push(row('seam alone (`PolicyCompiler.evaluate`, 2 slots: both workers), every request distinct', seam));
    rows.push(row('seam alone, 1 slot (one worker), every request distinct', oneWorker));
    rows.push(row('`isAuthorized` loop, main thread (parses the policy set per call)', raw));
    rows.push(row('`statefulIsAuthorized` loop, main thread (policy set parsed once)', stateful));
    rows.push('');
    rows.push(`\`POST /policy/test\` (${POLICIES}-policy draft): ${median(testAlone).toFixed(1)} ms alone, ${median(waits).toFixed(1)} ms median while a replay runs (max ${Math.max(...waits).toFixed(1)} ms)`);
    rows.push(
      `one chunk (${EVALUATION_CHUNK} requests, the longest a compile waits for a slot): ${((median(oneWorker) * EVALUATION_CHUNK) / DECISIONS).toFixed(1)} ms on one worker, against ${median(testAlone).toFixed(1)} ms for a whole \`test\``,
    );
  } finally {
    await close();
  }
  process.stdout.write(
    [
      `${new Date().toISOString()}, ${DECISIONS} decisions, ${POLICIES}-policy draft, median of ${ITERATIONS}, node ${process.version}, load average ${loadavg()[0].toFixed(1)} on ${cpus().length} cores`,
      '',
      '| Replay of 10,000 decisions | time | decisions/s | rate / `isAuthorized` loop | rate / `statefulIsAuthorized` loop |',
      '|---|---|---|---|---|',
      ...rows,
      '',
    ].join('\n'),
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
