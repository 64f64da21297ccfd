/**
 * The cost of issue 17's edge rule: `NODE_PATH=. node -r ts-node/register/transpile-only bench/input-text.ts`.
 * Runs `InputTextGuard.canActivate` (the text check of every path parameter, read query parameter
 * and body) on request shapes of this API, beside the baseline every such request already pays in
 * the same run: `JSON.parse` of the same body text (for a GET, of its query string as JSON). No
 * database, no server: the guard is the only code under test. BENCH_ITERATIONS (default 20000)
 * sets the calls per row (a tenth for the large bodies).
 */
import 'reflect-metadata';
import { Body, Controller, ExecutionContext, Get, Param, Post, Put, Query } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import { Answers } from 'src/common/http/documented';
import { InputTextGuard } from 'src/platform/http/input-text.guard';

const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 20000);

@Controller('api/v1/workspaces/:ws')
class Routes {
  @Post('keys')
  mint(@Param('ws') _ws: string, @Body() _body: unknown) {}

  @Put('pricing')
  pricing(@Body() _body: unknown) {}

  @Get('receipts/:receipt_id')
  @Answers(404, '`receipt not found`')
  receipt(@Param('receipt_id') _id: string, @Query() _query: unknown) {}
}

function context(handler: keyof Routes, request: object): ExecutionContext {
  return {
    getHandler: () => Routes.prototype[handler],
    getClass: () => Routes,
    switchToHttp: () => ({ getRequest: () => request }),
  } as unknown as ExecutionContext;
}

const ws = 'ws_0123456789abcdef01234567';
const price = (i: number) => ({ model: `model-${i}-*`, input_micros_usd_per_mtok: 2500000, output_micros_usd_per_mtok: 10000000, cached_micros_usd_per_mtok: 1250000, reasoning_micros_usd_per_mtok: 0 });
const cases: { name: string; handler: keyof Routes; params: object; query: object; body?: unknown; iterations: number }[] = [
  {
    name: 'GET receipt (2 params, 1 query value, no body)',
    handler: 'receipt',
    params: { ws, receipt_id: 'rcpt_0123456789abcdef01234567' },
    query: { revision: '3' },
    iterations: ITERATIONS,
  },
  {
    name: 'POST keys (a mint body, ~300 bytes)',
    handler: 'mint',
    params: { ws },
    query: {},
    body: { agent_id: 'support-bot', prefix: 'ob_test', allowed_models: ['gpt-*', 'claude-*'], allowed_tools: ['*'], rpm: 600, tpm: 100000, attributes: { team: 'support', region: 'eu-west-1', tier: 'gold' } },
    iterations: ITERATIONS,
  },
  { name: 'PUT pricing (500 prices, ~80 KB)', handler: 'pricing', params: { ws }, query: {}, body: { prices: Array.from({ length: 500 }, (_, i) => price(i)) }, iterations: ITERATIONS / 10 },
  { name: 'PUT policy-sized text (one 256 KiB string)', handler: 'pricing', params: { ws }, query: {}, body: { cedar_text: 'permit (principal, action, resource) when { context.env == "prod" };\n'.repeat(3800) }, iterations: ITERATIONS / 10 },
];

function time(iterations: number, work: () => void): number {
  for (let i = 0; i < Math.min(1000, iterations); i++) work();
  const start = performance.now();
  for (let i = 0; i < iterations; i++) work();
  return ((performance.now() - start) * 1e6) / iterations;
}

const guard = new InputTextGuard();
console.log(`${new Date().toISOString()}, node ${process.version}, ${ITERATIONS} calls per row (a tenth for the large bodies)\n`);
console.log('| Request | body bytes | guard ns/request | baseline: JSON.parse ns | guard / baseline |');
console.log('|---|---|---|---|---|');
for (const c of cases) {
  const text = JSON.stringify(c.body ?? c.query);
  const request = { params: c.params, query: c.query, body: c.body };
  const ctx = context(c.handler, request);
  const guarded = time(c.iterations, () => guard.canActivate(ctx));
  const parsed = time(c.iterations, () => JSON.parse(text));
  console.log(`| ${c.name} | ${c.body ? Buffer.byteLength(text) : 0} | ${guarded.toFixed(0)} | ${parsed.toFixed(0)} | ${(guarded / parsed).toFixed(2)} |`);
}
