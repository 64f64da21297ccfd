import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The folder graph of src/ (docs/conventions.md, "Layout"): each layer imports only the layers
 * below it, and the domain modules import one another without a cycle. Read from the import
 * statements, so a new import that breaks the order fails here before anyone reviews it.
 */

const LAYERS = ['src/common', 'src/config', 'src/database', 'src/platform', 'src/modules'] as const;

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : /\.ts$/.test(name) && !/\.spec\.ts$/.test(name) ? [path] : [];
  });
}

const importsOf = (source: string): string[] => [...source.matchAll(/^\s*(?:import|export)\s[^'"`;]*?from\s+'(src\/[^']+)'/gm)].map((m) => m[1]);

/** The layer of a path (`src/modules` for any module), or null for the top (app, entities, openapi, cli, main). */
const layerOf = (path: string) => LAYERS.find((layer) => path === layer || path.startsWith(`${layer}/`)) ?? null;
const moduleOf = (path: string) => /^src\/modules\/([^/]+)/.exec(path)?.[1] ?? null;

/** The imports of `sources` (path -> text) that point up or sideways out of order. */
export function layerViolations(sources: Map<string, string>): string[] {
  const found: string[] = [];
  for (const [file, source] of sources) {
    const from = layerOf(file);
    if (from === null) continue;
    for (const target of importsOf(source)) {
      const to = layerOf(target);
      if (to === null || LAYERS.indexOf(to) > LAYERS.indexOf(from)) found.push(`${file} imports ${target}`);
    }
  }
  return found;
}

/** A cycle among the modules' imports of each other, as `a -> b -> a`, or null. */
export function moduleCycle(sources: Map<string, string>): string | null {
  const edges = new Map<string, Set<string>>();
  for (const [file, source] of sources) {
    const from = moduleOf(file);
    if (from === null) continue;
    for (const target of importsOf(source)) {
      const to = moduleOf(target);
      if (to !== null && to !== from) edges.set(from, (edges.get(from) ?? new Set()).add(to));
    }
  }
  const state = new Map<string, 'open' | 'done'>();
  const visit = (node: string, path: string[]): string | null => {
    if (state.get(node) === 'open') return [...path.slice(path.indexOf(node)), node].join(' -> ');
    if (state.get(node) === 'done') return null;
    state.set(node, 'open');
    for (const next of edges.get(node) ?? []) {
      const cycle = visit(next, [...path, node]);
      if (cycle) return cycle;
    }
    state.set(node, 'done');
    return null;
  };
  for (const node of edges.keys()) {
    const cycle = visit(node, []);
    if (cycle) return cycle;
  }
  return null;
}

describe('the folder graph', () => {
  const sources = new Map(files('src').map((file) => [file, readFileSync(file, 'utf8')]));

  it('catches an import up the layers and a cycle between modules', () => {
    const sample = new Map([
      ['src/common/http/x.ts', `import { APP_CONFIG } from 'src/config/config';`],
      ['src/database/y.ts', `import { WorkspaceAccess } from 'src/platform/access/workspace-access.service';`],
      ['src/platform/z.ts', `import { KeysService } from 'src/modules/keys/keys.service';\nimport { ENTITIES } from 'src/entities';`],
      ['src/config/ok.ts', `import { parse } from 'src/common/http/body';`],
    ]);
    expect(layerViolations(sample)).toEqual([
      `src/common/http/x.ts imports src/config/config`,
      `src/database/y.ts imports src/platform/access/workspace-access.service`,
      `src/platform/z.ts imports src/modules/keys/keys.service`,
      `src/platform/z.ts imports src/entities`,
    ]);
    const cyclic = new Map([
      ['src/modules/a/a.ts', `import { B } from 'src/modules/b/b';`],
      ['src/modules/b/b.ts', `import { C } from 'src/modules/c/c';`],
      ['src/modules/c/c.ts', `import { A } from 'src/modules/a/a';`],
    ]);
    expect(moduleCycle(cyclic)).toBe('a -> b -> c -> a');
    cyclic.delete('src/modules/c/c.ts');
    expect(moduleCycle(cyclic)).toBeNull();
  });

  it('has every layer import only the layers below it', () => {
    expect(layerViolations(sources)).toEqual([]);
  });

  it('has no cycle between modules', () => {
    expect(moduleCycle(sources)).toBeNull();
  });

  it('names DataSource only in repositories and src/database', () => {
    const named = [...sources].filter(([file, source]) => /\bDataSource\b/.test(source) && !file.endsWith('.repository.ts') && !file.startsWith('src/database/'));
    expect(named.map(([file]) => file)).toEqual([]);
  });
});
