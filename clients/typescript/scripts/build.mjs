// `npm run build`: tsc twice over src/ (no bundler): dist/cjs (CommonJS) and dist/esm (ES modules),
// each with declarations and a package.json naming its module system for Node and for TypeScript.
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
rmSync(`${root}/dist`, { recursive: true, force: true });
for (const [config, dir, type] of [['tsconfig.json', 'cjs', 'commonjs'], ['tsconfig.esm.json', 'esm', 'module']]) {
  execFileSync(process.execPath, [tsc, '-p', `${root}/${config}`], { stdio: 'inherit' });
  mkdirSync(`${root}/dist/${dir}`, { recursive: true });
  writeFileSync(`${root}/dist/${dir}/package.json`, `${JSON.stringify({ type })}\n`);
}
