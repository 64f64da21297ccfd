import { DEFAULT_POLICY } from 'src/modules/policy/dto/policy.document';
import { AuthorizationRequest, Evaluation, EVALUATION_CHUNK, pagesOf, PolicyCompiler, PolicyCompilerError } from 'src/modules/policy/policy.compiler';

const TOOL_CALL = 'Gateway::Action::"tool.call"';

/** A policy of about `bytes` bytes that compiles cleanly. */
export function largePolicy(bytes: number): string {
  const rule = `permit (principal, action == ${TOOL_CALL}, resource) when { context.env == "prod" && resource.name like "*a*" };\n`;
  return rule.repeat(Math.floor(bytes / Buffer.byteLength(rule)));
}

describe('PolicyCompiler (cedar-wasm in worker threads)', () => {
  let compiler: PolicyCompiler;
  beforeAll(() => {
    compiler = new PolicyCompiler(2);
  });
  afterAll(() => compiler.close());

  it('compiles the default policy cleanly against the gateway schema', async () => {
    expect(await compiler.compile(DEFAULT_POLICY)).toEqual({ valid: true, diagnostics: [] });
  });

  it('reports a parse error at its line and column', async () => {
    const result = await compiler.compile('// first line\npermit (principal, action, resource) when { résource };\n');
    expect(result.valid).toBe(false);
    expect(result.diagnostics).toEqual([{ severity: 'error', code: 'parse_error', message: expect.any(String), line: 2, column: 46 }]); // the `é` of `résource`
  });

  it('reports schema type errors, not only syntax errors, with columns in characters', async () => {
    const source = `// é😀\npermit (principal, action == ${TOOL_CALL}, resource)\nwhen { resource.nme == "x" && context.env == 3 };`;
    const result = await compiler.compile(source);
    expect(result.valid).toBe(false);
    expect(result.diagnostics).toEqual([
      { severity: 'error', code: 'validation_error', message: expect.stringContaining('`nme`'), line: 3, column: 8 },
      { severity: 'error', code: 'validation_error', message: expect.stringContaining('Long and String'), line: 3, column: 31 },
    ]);
  });

  it('checks the key context: an unguarded key attribute is a type error', async () => {
    const source = `permit (principal, action == ${TOOL_CALL}, resource) when { context.key.attributes.getTag("team") == "a" };`;
    const bad = await compiler.compile(source);
    expect(bad.diagnostics).toEqual([expect.objectContaining({ severity: 'error', code: 'validation_error', line: 1, column: source.indexOf('context.key') + 1 })]);
    const good = await compiler.compile(
      `permit (principal is Gateway::Key, action == ${TOOL_CALL}, resource) when { context.key.attributes.hasTag("team") && context.key.attributes.getTag("team") == "a" && context.key.scopes.contains("mcp") };`,
    );
    expect(good).toEqual({ valid: true, diagnostics: [] });
  });

  it('reports warnings without failing the draft', async () => {
    const result = await compiler.compile('permit (principal, action, resource) when { false };');
    expect(result).toEqual({ valid: true, diagnostics: [expect.objectContaining({ severity: 'warning', code: 'validation_warning', line: 1, column: 1 })] });
  });

  it('compiles a maximum-size policy', async () => {
    const source = largePolicy(262144);
    expect(Buffer.byteLength(source)).toBeLessThanOrEqual(262144);
    expect((await compiler.compile(source)).valid).toBe(true);
  });
});

describe('PolicyCompiler bounds', () => {
  it('refuses a compile over the concurrency bound with policy_compiler_busy, and accepts again once one finishes', async () => {
    const compiler = new PolicyCompiler(1);
    try {
      const first = compiler.compile(DEFAULT_POLICY);
      await expect(compiler.compile(DEFAULT_POLICY)).rejects.toEqual(new PolicyCompilerError('policy_compiler_busy'));
      await expect(first).resolves.toEqual({ valid: true, diagnostics: [] });
      await expect(compiler.compile(DEFAULT_POLICY)).resolves.toEqual({ valid: true, diagnostics: [] });
    } finally {
      await compiler.close();
    }
  });

  it('answers policy_compiler_unavailable for a compile that outlives its timeout, then recovers with a fresh worker', async () => {
    const compiler = new PolicyCompiler(1, 1);
    try {
      const failure = await compiler.compile(largePolicy(262144)).catch((e: unknown) => e);
      expect(failure).toBeInstanceOf(PolicyCompilerError);
      expect((failure as PolicyCompilerError).reason).toBe('policy_compiler_unavailable');
      expect((failure as Error).message).toBe('policy_compiler_unavailable');
    } finally {
      await compiler.close();
    }
    const healthy = new PolicyCompiler(1);
    try {
      await expect(healthy.compile(DEFAULT_POLICY)).resolves.toEqual({ valid: true, diagnostics: [] });
    } finally {
      await healthy.close();
    }
  });
});

describe('PolicyCompiler evaluation (replay and explain)', () => {
  const WS = [{ uid: { type: 'Gateway::Workspace', id: 'ws_1' }, attrs: { env: 'dev' }, parents: [] }];
  const request = (tool: string, extra: Partial<AuthorizationRequest> = {}): AuthorizationRequest => ({
    principal: { type: 'Gateway::Key', id: 'key_1' },
    action: { type: 'Gateway::Action', id: 'tool.call' },
    resource: { type: 'Gateway::Tool', id: tool },
    context: { env: 'dev', surface: 'mcp' },
    entities: [
      { uid: { type: 'Gateway::Key', id: 'key_1' }, attrs: {}, parents: [{ type: 'Gateway::Workspace', id: 'ws_1' }] },
      { uid: { type: 'Gateway::Tool', id: tool }, attrs: { name: tool, connector: tool.split('.')[0] }, parents: [{ type: 'Gateway::Workspace', id: 'ws_1' }] },
    ],
    ...extra,
  });
  const SOURCE = [
    `permit (principal, action == ${TOOL_CALL}, resource in Gateway::Workspace::"ws_1");`,
    `forbid (principal, action == ${TOOL_CALL}, resource) when { resource.connector == "stripe" };`,
    `forbid (principal, action, resource) when { context.key.id == "x" };`,
  ].join('\n');

  /** Every result of an evaluation of `pages`, in order. */
  const evaluate = async (compiler: PolicyCompiler, key: string, ...pages: AuthorizationRequest[][]): Promise<Evaluation[]> => {
    const results: Evaluation[] = [];
    await compiler.evaluate(key, SOURCE, WS, pagesOf(...pages), (page) => results.push(...page));
    return results;
  };

  it('decides each request with the determining policies and evaluation errors (byte offsets into the source)', async () => {
    const compiler = new PolicyCompiler(1);
    try {
      const [allowed, denied, refused] = await evaluate(compiler, 'k1', [
        request('github.create_issue'),
        request('stripe.refund'),
        request('github.x', { principal: { type: 'Gateway::Key', id: 'key_1' }, entities: [{ uid: 'not an entity' }] }),
      ]);
      const keyError = { policy: 'policy2', message: expect.any(String), at: SOURCE.indexOf('context.key') };
      expect(allowed).toEqual({ decision: 'allow', reasons: ['policy0'], errors: [keyError] });
      expect(denied).toEqual({ decision: 'deny', reasons: ['policy1'], errors: [keyError] });
      expect(refused).toEqual({ refused: [expect.any(String)] });
    } finally {
      await compiler.close();
    }
  });

  it('evaluates in chunks spread over every slot, keeping request order across them', async () => {
    const compiler = new PolicyCompiler(2);
    try {
      const requests = Array.from({ length: EVALUATION_CHUNK * 5 + 5 }, (_, i) => request(i % 3 ? 'stripe.refund' : 'github.create_issue'));
      const results = await evaluate(compiler, 'k2', requests);
      expect(results.map((r) => ('decision' in r ? r.decision : 'refused'))).toEqual(requests.map((_, i) => (i % 3 ? 'deny' : 'allow')));
    } finally {
      await compiler.close();
    }
  });

  it('evaluates identical requests of a page once, answering each in its place', async () => {
    const compiler = new PolicyCompiler(2);
    try {
      // Distinct requests fill EVALUATION_CHUNK * 2 chunks; repeated ones among them would make more.
      const distinct = Array.from({ length: EVALUATION_CHUNK * 2 }, (_, i) => request(i % 2 ? `stripe.refund_${i}` : `github.create_issue_${i}`));
      const page = [...distinct, ...distinct, ...distinct].reverse();
      const chunks = jest.spyOn(compiler as unknown as { inSlot: (...args: unknown[]) => unknown }, 'inSlot');
      const results = await evaluate(compiler, 'k5', page);
      expect(results.map((r) => ('decision' in r ? r.decision : 'refused'))).toEqual(page.map((r) => (r.resource.id.startsWith('stripe') ? 'deny' : 'allow')));
      expect(chunks).toHaveBeenCalledTimes(2);
    } finally {
      await compiler.close();
    }
  });

  it('hands over each page before reading the next, as one admitted evaluation', async () => {
    const compiler = new PolicyCompiler(1);
    try {
      const seen: string[] = [];
      const tools = ['github.create_issue', 'stripe.refund', 'github.x'];
      const nextPage = async () => {
        const tool = tools.shift();
        if (tool === undefined) return null;
        seen.push(`read ${tool}`);
        return [request(tool), request(tool)];
      };
      const running = compiler.evaluate('k6', SOURCE, WS, nextPage, (results) => seen.push(results.map((r) => ('decision' in r ? r.decision : 'refused')).join(' ')));
      await expect(evaluate(compiler, 'k6', [request('github.create_issue')])).rejects.toEqual(new PolicyCompilerError('policy_compiler_busy'));
      await running;
      expect(seen).toEqual(['read github.create_issue', 'allow allow', 'read stripe.refund', 'deny deny', 'read github.x', 'allow allow']);
    } finally {
      await compiler.close();
    }
  });

  it('puts compiles first: a compile issued during an evaluation waits for one chunk, not for the evaluation', async () => {
    const compiler = new PolicyCompiler(1);
    try {
      const finished: string[] = [];
      const evaluation = evaluate(compiler, 'k3', Array.from({ length: EVALUATION_CHUNK * 10 }, (_, i) => request(`github.create_issue_${i}`))).then((r) => {
        finished.push('evaluation');
        return r;
      });
      await new Promise((resolve) => setImmediate(resolve));
      await expect(compiler.compile(DEFAULT_POLICY)).resolves.toEqual({ valid: true, diagnostics: [] });
      finished.push('compile');
      expect(await evaluation).toHaveLength(EVALUATION_CHUNK * 10);
      expect(finished).toEqual(['compile', 'evaluation']);
    } finally {
      await compiler.close();
    }
  });

  it('admits as many evaluations as the bound and refuses one more with policy_compiler_busy; compiles are admitted beside them', async () => {
    const compiler = new PolicyCompiler(1);
    try {
      const running = evaluate(compiler, 'k4', [request('github.create_issue')]);
      await expect(evaluate(compiler, 'k4', [request('github.create_issue')])).rejects.toEqual(new PolicyCompilerError('policy_compiler_busy'));
      await expect(compiler.compile(DEFAULT_POLICY)).resolves.toEqual({ valid: true, diagnostics: [] });
      await expect(running).resolves.toEqual([expect.objectContaining({ decision: 'allow' })]);
      await expect(evaluate(compiler, 'k4', [request('stripe.refund')])).resolves.toEqual([expect.objectContaining({ decision: 'deny' })]);
    } finally {
      await compiler.close();
    }
  });
});
