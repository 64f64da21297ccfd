import { setFlagsFromString } from 'node:v8';

/**
 * Makes calls into `@cedar-policy/cedar-wasm` safe from Node 20's V8 (11.3), for the whole process
 * (worker threads included); call it before any Cedar call can be optimized. TurboFan inlines a
 * JS-to-Wasm call into the optimized JavaScript that makes it. When that code is deoptimized while
 * the call runs (Cedar calls back into JavaScript to read the request and build its answer, which
 * can invalidate what the optimized code assumed), V8 rebuilds the frame around the Wasm
 * function's return value, cannot for an externref (what every cedar-wasm export returns) and
 * aborts the process: `Fatal error ... unreachable code` under
 * `Deoptimizer::DoComputeBuiltinContinuation`. Such calls are not inlined (docs/decisions.md).
 */
export function guardCedarCalls(): void {
  setFlagsFromString('--no-turbo-inline-js-wasm-calls');
}
