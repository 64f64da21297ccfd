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
 * The worker's whole program: load the compiler once, then answer one message at a time, either a
 * strict validation of a source or the evaluation of a chunk of authorization requests against a
 * source (parsed once per distinct `key`, kept in the worker's compiler state). An exception (a
 * compiler panic) is reported as `failed`, never as its text.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const cedar = require(workerData.compiler);
const schema = workerData.schema;
let parsedKey = null;
function evaluate({ key, source, shared, requests }) {
  if (parsedKey !== key) {
    parsedKey = null;
    if (cedar.preparsePolicySet('replay', { staticPolicies: source }).type !== 'success') return { failed: true };
    parsedKey = key;
  }
  const results = new Array(requests.length);
  for (let i = 0; i < requests.length; i++) {
    const q = requests[i];
    const answer = cedar.statefulIsAuthorized({
      principal: q.principal, action: q.action, resource: q.resource, context: q.context,
      entities: q.entities.concat(shared), preparsedPolicySetId: 'replay',
    });
    if (answer.type !== 'success') {
      results[i] = { refused: answer.errors.map((e) => e.message) };
      continue;
    }
    const { decision, diagnostics } = answer.response;
    results[i] = {
      decision,
      reasons: diagnostics.reason,
      errors: diagnostics.errors.map((e) => ({ policy: e.policyId, message: e.error.message, at: e.error.sourceLocations && e.error.sourceLocations[0] ? e.error.sourceLocations[0].start : null })),
    };
  }
  return { answer: results };
}
parentPort.on('message', (message) => {
  let answer;
  try {
    if (message.kind === 'evaluate') {
      parentPort.postMessage(evaluate(message));
      return;
    }
    answer = cedar.validate({ schema, policies: { staticPolicies: message.source }, validationSettings: { mode: 'strict' } });
  } catch {
    parentPort.postMessage({ failed: true });
    return;
  }
  parentPort.postMessage({ answer });
});
`;

/** A Cedar authorization request as the gateway records it (CONTRACT.md 4.4): entity uids are `{type, id}`. */
export interface AuthorizationRequest {
  principal: { type: string; id: string };
  action: { type: string; id: string };
  resource: { type: string; id: string };
  context: Record<string, unknown>;
  entities: unknown[];
}

/** What one request came to: a decision with Cedar's policy ids, or a request Cedar refused to evaluate. */
export type Evaluation =
  | { decision: 'allow' | 'deny'; reasons: string[]; errors: { policy: string; message: string; at: number | null }[] }
  | { refused: string[] };

/** Requests per worker message: a replay holds one slot of the seam for one chunk at a time. */
export const EVALUATION_CHUNK = 1000;

type WorkerReply<T> = { answer: T } | { failed: true };
type WorkerMessage = { kind: 'validate'; source: string } | { kind: 'evaluate'; key: string; source: string; shared: unknown[]; requests: AuthorizationRequest[] };

/**
 * The one compiler seam shared by test, publish, the snapshot and policy replay/explain: `@cedar-policy/cedar-wasm` in
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
  /** Evaluations under way (each holds a slot only while one of its chunks runs). */
  private evaluating = 0;

  constructor(
    private readonly concurrency: number,
    private readonly timeoutMs = DEFAULT_POLICY_COMPILE_TIMEOUT_MS,
    private readonly metrics?: Pick<MetricsService, 'compileDuration' | 'compileBusy'>,
  ) {}

  /** Parses and validates `source` against the gateway schema. Throws PolicyCompilerError only. */
  async compile(source: string): Promise<CompileResult> {
    this.acquire();
    const stopTimer = this.metrics?.compileDuration.startTimer();
    try {
      return toCompileResult(source, await this.run<ValidationAnswer>({ kind: 'validate', source }));
    } finally {
      stopTimer?.();
      this.inFlight--;
    }
  }

  /**
   * Evaluates `requests` against `source` (a source that compiles; `key` names it, such as its
   * hash), adding `shared` entities to every request. Chunks of EVALUATION_CHUNK requests each
   * take a slot of the seam and give it back before the next. Evaluations never take the last
   * free slot (unless the seam has only one): however many replays run, a compile (test,
   * publish, the snapshot) always finds one. An evaluation that finds as many others under way
   * as it may have slots fails at once with `policy_compiler_busy`; before each chunk it waits for
   * compiles holding those slots to finish (yieldTo), and fails busy only if one is still taken
   * after `timeoutMs`.
   */
  async evaluate(key: string, source: string, shared: unknown[], requests: AuthorizationRequest[]): Promise<Evaluation[]> {
    const results: Evaluation[] = [];
    const bound = Math.max(1, this.concurrency - 1);
    if (this.evaluating >= bound) {
      this.metrics?.compileBusy.inc();
      throw new PolicyCompilerError('policy_compiler_busy');
    }
    this.evaluating++;
    try {
      for (let at = 0; at < requests.length; at += EVALUATION_CHUNK) {
        await this.yieldTo(bound);
        this.acquire(bound);
        try {
          results.push(...(await this.run<Evaluation[]>({ kind: 'evaluate', key, source, shared, requests: requests.slice(at, at + EVALUATION_CHUNK) })));
        } finally {
          this.inFlight--;
        }
      }
    } finally {
      this.evaluating--;
    }
    return results;
  }

  /**
   * Before a chunk: gives the event loop a turn, then waits while compiles hold the slots an
   * evaluation may use (at most `timeoutMs`), so a replay yields to test and publish and resumes
   * after them instead of failing.
   */
  private async yieldTo(bound: number): Promise<void> {
    await new Promise((resolve) => setImmediate(resolve));
    const deadline = Date.now() + this.timeoutMs;
    while (this.inFlight >= bound && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
  }

  private acquire(bound = this.concurrency): void {
    if (this.inFlight >= bound) {
      this.metrics?.compileBusy.inc();
      throw new PolicyCompilerError('policy_compiler_busy');
    }
    this.inFlight++;
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

  private run<T>(message: WorkerMessage): Promise<T> {
    const worker = this.idle.pop() ?? this.spawn();
    return new Promise((resolve, reject) => {
      const settle = (reply: WorkerReply<T> | null, failure?: string) => {
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
      const onMessage = (reply: WorkerReply<T>) => settle(reply);
      const onError = () => settle(null, 'worker crashed');
      const onExit = () => settle(null, 'worker exited');
      const timer = setTimeout(() => settle(null, 'timed out'), this.timeoutMs);
      worker.on('message', onMessage).on('error', onError).on('exit', onExit);
      worker.postMessage(message);
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
