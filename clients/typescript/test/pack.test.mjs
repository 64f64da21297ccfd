// `npm pack` gives an installable package: installed into a temporary directory, it loads from
// CommonJS and from ES modules, and its declarations type-check a consumer of each kind. It is
// packed from a clean copy of the package (no dist/, as in a fresh clone): `prepack` builds it.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const dir = mkdtempSync(join(tmpdir(), 'control-client-'));
const npm = (...args) => execFileSync('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], { cwd: dir, encoding: 'utf8' });
const node = (...args) => execFileSync(process.execPath, args, { cwd: dir, encoding: 'utf8' });

const clean = mkdtempSync(join(tmpdir(), 'control-client-src-'));

before(() => {
  // A fresh clone's package: its sources and scripts, no build; the workspace's installed modules.
  for (const entry of ['package.json', 'README.md', 'tsconfig.json', 'tsconfig.esm.json', 'src', 'scripts']) cpSync(join(root, entry), join(clean, entry), { recursive: true });
  symlinkSync(join(root, '../../node_modules'), join(clean, 'node_modules'), 'dir');
  assert.equal(existsSync(join(clean, 'dist')), false);
  const [{ filename }] = JSON.parse(execFileSync('npm', ['pack', '--json', '--pack-destination', dir], { cwd: clean, encoding: 'utf8' }));
  writeFileSync(join(dir, 'package.json'), '{"name":"consumer","private":true}\n');
  // Its dependencies come from the npm cache the workspace install filled (the registry otherwise).
  npm('install', '--prefer-offline', join(dir, filename));
});
after(() => {
  rmSync(dir, { recursive: true, force: true });
  rmSync(clean, { recursive: true, force: true });
});

test('the tarball ships the two builds with declarations, and no sources or tests', () => {
  const files = readdirSync(join(dir, 'node_modules/@agent-gateway/control-client'), { recursive: true }).sort();
  for (const file of ['dist/cjs/index.js', 'dist/cjs/index.d.ts', 'dist/esm/index.js', 'dist/esm/index.d.ts', 'dist/esm/schema.d.ts', 'package.json']) assert.ok(files.includes(file), file);
  assert.deepEqual(files.filter((file) => /^(src|test|scripts)\b/.test(file)), []);
});

test('loads from CommonJS and from ES modules', () => {
  const probe = "typeof m.createControlClient + typeof m.paginate + typeof m.createControlClient({ baseUrl: 'http://x', token: 't' }).events + (new m.ControlError(409, { detail: 'x' }, new Response(null, { status: 409 })) instanceof Error)";
  assert.equal(node('-e', `const m = require('@agent-gateway/control-client'); process.stdout.write(String(${probe}))`), 'functionfunctionfunctiontrue');
  assert.equal(node('--input-type=module', '-e', `import * as m from '@agent-gateway/control-client'; process.stdout.write(String(${probe}))`), 'functionfunctionfunctiontrue');
});

test('the runtime imports nothing but openapi-fetch (no Node built-in: it runs in browsers)', () => {
  for (const build of ['esm', 'cjs']) {
    const code = readFileSync(join(dir, `node_modules/@agent-gateway/control-client/dist/${build}/index.js`), 'utf8');
    const imported = [...code.matchAll(/(?:from |require\()["']([^"']+)["']/g)].map((match) => match[1]);
    assert.deepEqual([...new Set(imported)], ['openapi-fetch'], build);
  }
});

test('the declarations type a consumer of either module system', () => {
  const use = (load) => `${load}
const client = createControlClient({ baseUrl: 'https://control.test', token: 't' });
export async function main(): Promise<string> {
  const me = await client.GET('/api/v1/me');
  // @ts-expect-error the document has no such route
  await client.GET('/api/v1/nowhere');
  return me.default_workspace_id;
}
`;
  writeFileSync(join(dir, 'esm.mts'), use("import { createControlClient } from '@agent-gateway/control-client';"));
  writeFileSync(join(dir, 'cjs.cts'), use("import control = require('@agent-gateway/control-client');\nconst { createControlClient } = control;"));
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', lib: ['ES2022', 'DOM'], strict: true, noEmit: true, skipLibCheck: true, types: [] }, files: ['esm.mts', 'cjs.cts'] }));
  node(tsc, '-p', dir);
});
