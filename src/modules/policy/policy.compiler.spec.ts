import { DEFAULT_POLICY } from 'src/modules/policy/dto/policy.document';
import { PolicyCompiler, PolicyCompilerError } from 'src/modules/policy/policy.compiler';

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
