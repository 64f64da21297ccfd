import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

/**
 * The V8 abort guardCedarCalls avoids, made certain: an optimized function that calls cedar-wasm is
 * deoptimized while the call runs (from a getter Cedar reads on the request). Run in a child
 * process (natives syntax on), as it is (`bare`) or after a PolicyCompiler was made (`compiler`).
 */
const REPRODUCER = `
const { isAuthorized } = require('@cedar-policy/cedar-wasm/nodejs');
if (process.argv[1] === 'compiler') void new (require('src/modules/policy/policy.compiler').PolicyCompiler)(1).close();
let trap = false;
const request = () => {
  const q = { principal: { type: 'User', id: 'a' }, action: { type: 'Action', id: 'b' }, resource: { type: 'R', id: 'c' }, entities: [], policies: { staticPolicies: 'permit (principal, action, resource);' } };
  Object.defineProperty(q, 'context', { enumerable: true, get: () => { if (trap) %DeoptimizeFunction(decide); return {}; } });
  return q;
};
function decide(q) { return isAuthorized(q).response.decision; }
%PrepareFunctionForOptimization(decide);
%PrepareFunctionForOptimization(isAuthorized);
decide(request());
decide(request());
%OptimizeFunctionOnNextCall(decide);
decide(request());
trap = true;
console.log(decide(request()));
`;

const run = (mode: 'bare' | 'compiler') =>
  spawnSync(process.execPath, ['--allow-natives-syntax', '-r', 'ts-node/register/transpile-only', '-e', REPRODUCER, mode], {
    cwd: join(__dirname, '../../..'),
    env: { ...process.env, NODE_PATH: '.' },
    encoding: 'utf8',
  });

describe('guardCedarCalls', () => {
  it('is needed: on this Node, V8 aborts the process when such a call is deoptimized while it runs', () => {
    const child = run('bare');
    expect([child.signal, child.stdout]).toEqual(['SIGTRAP', '']);
    expect(child.stderr).toContain('unreachable code');
    expect(child.stderr).toContain('Deoptimizer::DoComputeBuiltinContinuation');
  });

  it('is set by every PolicyCompiler: the same call then completes with its answer', () => {
    const child = run('compiler');
    expect([child.status, child.stdout, child.stderr]).toEqual([0, 'allow\n', '']);
  });
});
