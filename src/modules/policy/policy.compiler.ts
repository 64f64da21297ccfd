import { Logger, OnModuleDestroy } from '@nestjs/common';
import type { ValidationAnswer } from '@cedar-policy/cedar-wasm/nodejs';
import { Worker } from 'node:worker_threads';
import { guardCedarCalls } from 'src/modules/policy/cedar-wasm';
import { CompileResult, toCompileResult } from 'src/modules/policy/diagnostics';
import GATEWAY_SCHEMA from 'src/modules/policy/gateway.cedarschema.json';
import { MetricsService } from 'src/platform/metrics/metrics.service';
import { inLanes } from 'src/common/async/lanes';
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

/** Requests per worker message: a compile waits at most for one chunk (about 12 ms at 100 policies on this machine, about one compile of such a draft). */
export const EVALUATION_CHUNK = 50;
/** Distinct requests an evaluation remembers the answers of (about 1 KiB each), to answer repeats on later pages without Cedar. */
export const MAX_KNOWN = 20_000;

type WorkerReply<T> = { answer: T } | { failed: true };
type WorkerMessage = { kind: 'validate'; source: string } | { kind: 'evaluate'; key: string; source: string; shared: unknown[]; requests: AuthorizationRequest[] };

/**
 * The one compiler seam shared by test, publish, the snapshot and policy replay/explain: `@cedar-policy/cedar-wasm` in
 * worker threads (off the event loop), at most `concurrency` worker runs at once. At most
 * `concurrency` compiles and as many evaluations are admitted at a time; one more of either is
 * refused at once with `policy_compiler_busy`. Compiles come first: a compile takes a free slot,
 * or the slot of the next evaluation chunk to finish, so an evaluation delays it by at most one
 * chunk. A worker run that crashes its worker or outlives `timeoutMs` fails with
 * `policy_compiler_unavailable` and its worker is replaced. Workers are reused while healthy;
 * none keeps the process alive.
 */
export class PolicyCompiler implements OnModuleDestroy {
  private readonly logger = new Logger('policy-compiler');
  private readonly idle: Worker[] = [];
  private readonly workers = new Set<Worker>();
  private readonly compilerPath = require.resolve('@cedar-policy/cedar-wasm/nodejs');
  /** Worker runs under way (compiles and evaluation chunks). */
  private running = 0;
  private compiles = 0;
  private evaluations = 0;
  /** Compiles, then chunks, waiting for a slot: a finishing run hands its slot to the first of them. */
  private readonly waiting = { compile: [] as (() => void)[], chunk: [] as (() => void)[] };

  constructor(
    private readonly concurrency: number,
    private readonly timeoutMs = DEFAULT_POLICY_COMPILE_TIMEOUT_MS,
    private readonly metrics?: Pick<MetricsService, 'compileDuration' | 'compileBusy'>,
  ) {
    guardCedarCalls();
  }

  /** Parses and validates `source` against the gateway schema. Throws PolicyCompilerError only. */
  async compile(source: string): Promise<CompileResult> {
    this.admit(this.compiles);
    this.compiles++;
    try {
      return toCompileResult(source, await this.inSlot<ValidationAnswer>('compile', { kind: 'validate', source }));
    } finally {
      this.compiles--;
    }
  }

  /**
   * Evaluates pages of requests against `source` (a source that compiles; `key` names it, such as
   * its hash) as one admitted evaluation, adding `shared` entities to every request: `nextPage`
   * gives each page (null after the last), and `take` gets its results in request order before the
   * next page is asked for, so a caller streaming pages
   * from the database holds one page at a time. A page goes in chunks of EVALUATION_CHUNK spread
   * over every slot of the seam, each chunk waiting for compiles first. A request identical to one
   * already evaluated (among the first MAX_KNOWN distinct ones) is answered from it: Cedar's answer
   * is a function of the policy set and the request, and recorded traffic repeats (a key calling
   * the same tool in the same context).
   */
  async evaluate(
    key: string,
    source: string,
    shared: unknown[],
    nextPage: () => Promise<AuthorizationRequest[] | null>,
    take: (results: Evaluation[]) => void,
  ): Promise<void> {
    this.admit(this.evaluations);
    this.evaluations++;
    try {
      const known = new Map<string, Evaluation>();
      for (let page = await nextPage(); page !== null; page = await nextPage()) take(await this.evaluatePage(key, source, shared, page, known));
    } finally {
      this.evaluations--;
    }
  }

  private async evaluatePage(key: string, source: string, shared: unknown[], requests: AuthorizationRequest[], known: Map<string, Evaluation>): Promise<Evaluation[]> {
    const texts = requests.map((request) => JSON.stringify(request));
    const fresh = new Map<string, AuthorizationRequest>();
    for (let i = 0; i < requests.length; i++) if (!known.has(texts[i])) fresh.set(texts[i], requests[i]);
    const unique = [...fresh.values()];
    const results = new Array<Evaluation>(unique.length);
    await inLanes(Math.ceil(unique.length / EVALUATION_CHUNK), this.concurrency, async (chunk) => {
      const at = chunk * EVALUATION_CHUNK;
      const answers = await this.inSlot<Evaluation[]>('chunk', { kind: 'evaluate', key, source, shared, requests: unique.slice(at, at + EVALUATION_CHUNK) });
      answers.forEach((answer, i) => (results[at + i] = answer));
    });
    const page = new Map([...fresh.keys()].map((text, i) => [text, results[i]]));
    for (const [text, result] of page) {
      if (known.size >= MAX_KNOWN) break;
      known.set(text, result);
    }
    return texts.map((text) => known.get(text) ?? page.get(text)!);
  }

  private admit(admitted: number): void {
    if (admitted >= this.concurrency) {
      this.metrics?.compileBusy.inc();
      throw new PolicyCompilerError('policy_compiler_busy');
    }
  }

  /**
   * One worker run in a slot: taken at once when free (and, for a chunk, no compile waits), else
   * handed over by a finishing run. A compile's run is timed from its slot on (the compile latency
   * metric does not count the wait for a chunk to finish).
   */
  private async inSlot<T>(kind: 'compile' | 'chunk', message: WorkerMessage): Promise<T> {
    if (this.running < this.concurrency && (kind === 'compile' || this.waiting.compile.length === 0)) this.running++;
    else await new Promise<void>((resolve) => this.waiting[kind].push(resolve));
    const stopTimer = kind === 'compile' ? this.metrics?.compileDuration.startTimer() : undefined;
    try {
      return await this.run<T>(message);
    } finally {
      stopTimer?.();
      const next = this.waiting.compile.shift() ?? this.waiting.chunk.shift();
      if (next) next();
      else this.running--;
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

/** A `nextPage` for PolicyCompiler.evaluate over pages already at hand. */
export function pagesOf(...pages: AuthorizationRequest[][]): () => Promise<AuthorizationRequest[] | null> {
  return () => Promise.resolve(pages.shift() ?? null);
}
