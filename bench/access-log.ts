/**
 * What one access-log line costs, before and after issue 30, in one process: the line built as an
 * object and written through Nest's Logger and JsonLogger with one `write` per line (before), and
 * built as text and written by the batching sink (after: src/common/logging/log-sink.ts), each
 * flushed at the end of an event-loop turn as a burst of BENCH_BURST lines (the requests one turn
 * of a loaded server answers). Run with stdout on a pipe, as a log collector reads it:
 *
 *   NODE_PATH=. node -r ts-node/register/transpile-only bench/access-log.ts | cat > /dev/null
 *
 * Results go to stderr: CPU microseconds per line (user + system), alternating rounds.
 */
import { Logger } from '@nestjs/common';
import { JsonLogger } from 'src/common/logging/json-logger';
import { writeLine } from 'src/common/logging/log-sink';

const LINES = Number(process.env.BENCH_LINES ?? 200_000);
const BURST = Number(process.env.BENCH_BURST ?? 16);
const ROUNDS = 3;
Logger.overrideLogger(new JsonLogger('info'));
const logger = new Logger('access');

const before = () =>
  logger.log({ msg: 'request', method: 'GET', route: '/internal/v1/keys/:keyHash', status: 200, duration_ms: Math.round(Math.random() * 10000) / 100, request_id: 'req_0123456789abcdef01234567' });
const after = () =>
  writeLine(
    `{"time":"${new Date().toISOString()}","level":"info","context":"access","msg":"request","method":"GET","route":"/internal/v1/keys/:keyHash","status":200,"duration_ms":${Math.round(Math.random() * 10000) / 100},"request_id":"req_0123456789abcdef01234567"}\n`,
  );

async function measure(write: () => void): Promise<number> {
  const start = process.cpuUsage();
  for (let i = 0; i < LINES; i += BURST) {
    for (let j = 0; j < BURST; j++) write();
    await new Promise((resolve) => setImmediate(resolve));
  }
  const used = process.cpuUsage(start);
  return (used.user + used.system) / LINES;
}

async function main(): Promise<void> {
  const results: Record<string, number[]> = { before: [], after: [], 'no line (the loop alone)': [] };
  for (let round = 0; round < ROUNDS; round++) {
    results.before.push(await measure(before));
    results.after.push(await measure(after));
    results['no line (the loop alone)'].push(await measure(() => undefined));
  }
  for (const [name, values] of Object.entries(results)) process.stderr.write(`${name}: ${values.map((v) => v.toFixed(2)).join(', ')} us CPU per line\n`);
}

void main();
