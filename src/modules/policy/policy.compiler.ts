import { Logger, OnModuleDestroy } from '@nestjs/common';
import type { ValidationAnswer } from '@cedar-policy/cedar-wasm/nodejs';
import { Worker } from 'node:worker_threads';
import { CompileResult, toCompileResult } from 'src/modules/policy/diagnostics';
import GATEWAY_SCHEMA from 'src/modules/policy/gateway.cedarschema.json';
import { MetricsService } from 'src/common/metrics/metrics.service';
import { DEFAULT_POLICY_COMPILE_TIMEOUT_MS } from 'src/config/config';

export type CompilerFailure = 'policy_compiler_busy' | 'policy_compiler_unavailable';

/** The seam could not compile: over its concurrency budget, or the compile crashed or timed out. */
export class PolicyCompilerError extends Error {
  constructor(readonly reason: CompilerFailure) {
    super(reason);
  }
}

/**
 * The worker's whole program: load the compiler once, then answer one strict validation per
 * message. An exception (a compiler panic) is reported as `failed`, never as its text.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const cedar = require(workerData.compiler);
const schema = workerData.schema;
parentPort.on('message', (source) => {
  let answer;
  try {
    answer = cedar.validate({ schema, policies: { staticPolicies: source }, validationSettings: { mode: 'strict' } });
  } catch {
    parentPort.postMessage({ failed: true });
    return;
  }
  parentPort.postMessage({ answer });
});
`;

type WorkerReply = { answer: ValidationAnswer } | { failed: true };

/**
 * The one compiler seam shared by test, publish and the snapshot: `@cedar-policy/cedar-wasm` in
 * worker threads (off the event loop), at most `concurrency` compiles in flight in this process.
 * One more is refused at once with `policy_compiler_busy`; a compile that crashes its worker or
 * outlives `timeoutMs` fails with `policy_compiler_unavailable` and its worker is replaced.
 * Workers are reused while healthy; none keeps the process alive.
 */
export class PolicyCompiler implements OnModuleDestroy {
  private readonly logger = new Logger('policy-compiler');
  private readonly idle: Worker[] = [];
  private readonly workers = new Set<Worker>();
  private readonly compilerPath = require.resolve('@cedar-policy/cedar-wasm/nodejs');
  private inFlight = 0;

  constructor(
    private readonly concurrency: number,
    private readonly timeoutMs = DEFAULT_POLICY_COMPILE_TIMEOUT_MS,
    private readonly metrics?: Pick<MetricsService, 'compileDuration' | 'compileBusy'>,
  ) {}

  /** Parses and validates `source` against the gateway schema. Throws PolicyCompilerError only. */
  async compile(source: string): Promise<CompileResult> {
    if (this.inFlight >= this.concurrency) {
      this.metrics?.compileBusy.inc();
      throw new PolicyCompilerError('policy_compiler_busy');
    }
    this.inFlight++;
    const stopTimer = this.metrics?.compileDuration.startTimer();
    try {
      return toCompileResult(source, await this.run(source));
    } finally {
      stopTimer?.();
      this.inFlight--;
    }
  }

  onModuleDestroy(): Promise<void> {
    return this.close();
  }

  async close(): Promise<void> {
    const all = [...this.workers];
    this.workers.clear();
    this.idle.length = 0;
    await Promise.all(all.map((w) => w.terminate()));
  }

  private run(source: string): Promise<ValidationAnswer> {
    const worker = this.idle.pop() ?? this.spawn();
    return new Promise((resolve, reject) => {
      const settle = (reply: WorkerReply | null, failure?: string) => {
        clearTimeout(timer);
        worker.off('message', onMessage).off('error', onError).off('exit', onExit);
        if (reply && 'answer' in reply) {
          this.idle.push(worker);
          resolve(reply.answer);
          return;
        }
        this.logger.warn({ msg: 'policy compile failed', reason: failure ?? 'compiler error' });
        this.discard(worker);
        reject(new PolicyCompilerError('policy_compiler_unavailable'));
      };
      const onMessage = (reply: WorkerReply) => settle(reply);
      const onError = () => settle(null, 'worker crashed');
      const onExit = () => settle(null, 'worker exited');
      const timer = setTimeout(() => settle(null, 'timed out'), this.timeoutMs);
      worker.on('message', onMessage).on('error', onError).on('exit', onExit);
      worker.postMessage(source);
    });
  }

  private spawn(): Worker {
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { compiler: this.compilerPath, schema: GATEWAY_SCHEMA }, stdout: true, stderr: true });
    worker.unref();
    // Whatever the compiler prints is dropped: it never reaches a log line or a response.
    worker.stdout.resume();
    worker.stderr.resume();
    // An idle worker that dies is dropped so the next compile never waits on it.
    worker.once('exit', () => this.forget(worker));
    worker.on('error', () => undefined);
    this.workers.add(worker);
    return worker;
  }

  private discard(worker: Worker): void {
    this.forget(worker);
    void worker.terminate();
  }

  private forget(worker: Worker): void {
    this.workers.delete(worker);
    const at = this.idle.indexOf(worker);
    if (at >= 0) this.idle.splice(at, 1);
  }
}
