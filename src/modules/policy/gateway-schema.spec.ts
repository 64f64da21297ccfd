import { schemaToJsonWithResolvedTypes } from '@cedar-policy/cedar-wasm/nodejs';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_POLICY } from 'src/modules/policy/dto/policy.document';
import GATEWAY_SCHEMA from 'src/modules/policy/gateway.cedarschema.json';
import { PolicyCompiler } from 'src/modules/policy/policy.compiler';

const docs = readFileSync(join(__dirname, '../../../docs/policy.md'), 'utf8');
const blocks = (lang: string) => [...docs.matchAll(new RegExp('```' + lang + '\\n([\\s\\S]*?)```', 'g'))].map((m) => m[1]);

describe('gateway schema and docs/policy.md', () => {
  it('documents exactly the schema the compiler uses', () => {
    const [text] = blocks('cedarschema');
    const answer = schemaToJsonWithResolvedTypes(text);
    expect(answer.type).toBe('success');
    expect(answer.type === 'success' && answer.json).toEqual(GATEWAY_SCHEMA);
  });

  it('documents the default policy verbatim, and every documented example compiles cleanly', async () => {
    const examples = blocks('cedar');
    expect(examples).toContain(DEFAULT_POLICY);
    const compiler = new PolicyCompiler(1);
    try {
      for (const source of examples) expect(await compiler.compile(source)).toEqual({ valid: true, diagnostics: [] });
    } finally {
      await compiler.close();
    }
  });
});
