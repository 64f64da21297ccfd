import 'reflect-metadata';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import * as ts from 'typescript';
import { getMetadataArgsStorage } from 'typeorm';
import { ENTITIES_BY_OWNER } from 'src/entities';

/**
 * Ownership, as the build enforces it: every table belongs to the folder whose entity list
 * (`entities/index.ts`, gathered in src/entities.ts) holds its entity, and a repository names only
 * its own folder's tables: in its SQL (any FROM, JOIN, UPDATE, INTO, TABLE or USING) and in the
 * entities it imports. docs/decisions.md's ownership table is checked against the same lists.
 */

type Owners = Map<string, string>;

/** table name -> owning folder, from the entity lists. */
function tableOwners(): Owners {
  const tables = getMetadataArgsStorage().tables;
  const owners: Owners = new Map();
  for (const [owner, entities] of Object.entries(ENTITIES_BY_OWNER)) {
    for (const entity of entities as unknown[]) {
      const table = tables.find((t) => t.target === entity);
      if (!table?.name) throw new Error(`${owner}: an entity without a table name`);
      owners.set(table.name, owner);
    }
  }
  return owners;
}

/** The folder (an owner) a file belongs to, or null when it is under none. */
export function ownerOf(file: string, owners: Iterable<string>): string | null {
  return [...owners].sort((a, b) => b.length - a.length).find((owner) => file === owner || file.startsWith(`${owner}/`)) ?? null;
}

const SQL_TABLE = /\b(?:FROM|JOIN|UPDATE|INTO|TABLE|USING)\s+(?:ONLY\s+)?"?([a-z_][a-z0-9_]*)"?/gi;

/** Every table named in a string or template literal of `source`, and every import path. */
function namesIn(source: string): { tables: Set<string>; imports: string[] } {
  const sf = ts.createSourceFile('x.ts', source, ts.ScriptTarget.Latest, true);
  const tables = new Set<string>();
  const imports: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) imports.push(node.moduleSpecifier.text);
    let text: string | null = null;
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) text = node.text;
    else if (ts.isTemplateExpression(node)) text = [node.head.text, ...node.templateSpans.map((s) => s.literal.text)].join(' ');
    if (text !== null && !ts.isImportDeclaration(node.parent)) for (const match of text.matchAll(SQL_TABLE)) tables.add(match[1].toLowerCase());
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return { tables, imports };
}

/** What `file` (a repository, with its source) names of another folder's tables. */
export function violations(file: string, source: string, owners: Owners): string[] {
  const folders = new Set(owners.values());
  const mine = ownerOf(file, folders);
  const found: string[] = [];
  const { tables, imports } = namesIn(source);
  for (const table of tables) {
    const owner = owners.get(table);
    if (owner !== undefined && owner !== mine) found.push(`${file} names ${table} (owned by ${owner})`);
  }
  for (const path of imports) {
    if (!/\.entity$|\/entities(\/index)?$/.test(path)) continue;
    const owner = ownerOf(path, folders);
    if (owner !== null && owner !== mine) found.push(`${file} imports ${path} (owned by ${owner})`);
  }
  return found;
}

function filesUnder(dir: string, suffix: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path, suffix) : path.endsWith(suffix) ? [path] : [];
  });
}

/** The ownership table of docs/decisions.md as the entity lists give it. */
export function ownershipTable(owners: Owners): string {
  const byOwner = new Map<string, string[]>();
  for (const [table, owner] of owners) byOwner.set(owner, [...(byOwner.get(owner) ?? []), table]);
  const rows = [...byOwner].sort(([a], [b]) => a.localeCompare(b)).map(([owner, tables]) => `| \`${owner}\` | ${tables.sort().map((t) => `\`${t}\``).join(', ')} |`);
  return ['| Owner | Tables |', '|---|---|', ...rows].join('\n');
}

describe('table ownership', () => {
  const owners = tableOwners();

  it('gives every table one owner', () => {
    expect(owners.size).toBe(Object.values(ENTITIES_BY_OWNER).flat().length);
  });

  it('finds another folder’s table in a statement, a join, a subquery and an entity import', () => {
    const [table, owner] = [...owners].find(([, o]) => o === 'src/modules/keys')!;
    const foreign = [...owners].find(([, o]) => o !== owner)!;
    const file = 'src/modules/keys/sample.repository.ts';
    expect(violations(file, `const q = \`SELECT * FROM ${table} k\`;`, owners)).toEqual([]);
    expect(violations(file, `const q = \`SELECT * FROM ${table} k JOIN ${foreign[0]} w ON w.id = k.x\`;`, owners)).toHaveLength(1);
    expect(violations(file, `const q = 'UPDATE ${foreign[0]} SET a = 1';`, owners)).toHaveLength(1);
    expect(violations(file, `const q = \`SELECT 1 WHERE EXISTS (SELECT 1 FROM \${x} , y) AND id IN (SELECT id FROM ${foreign[0]})\`;`, owners)).toHaveLength(1);
    expect(violations(file, `import { Other } from '${foreign[1]}/entities';`, owners)).toHaveLength(1);
    expect(violations('src/modules/health/probe.repository.ts', `const q = 'SELECT 1 FROM ${table}';`, owners)).toHaveLength(1);
  });

  it('holds for every repository', () => {
    const repositories = filesUnder('src', '.repository.ts');
    expect(repositories.length).toBeGreaterThan(0);
    expect(repositories.flatMap((file) => violations(file, readFileSync(file, 'utf8'), owners))).toEqual([]);
  });

  it('is the table docs/decisions.md shows', () => {
    const doc = readFileSync('docs/decisions.md', 'utf8');
    const shown = /<!-- ownership:begin -->\n([\s\S]*?)\n<!-- ownership:end -->/.exec(doc)?.[1];
    expect(shown).toBe(ownershipTable(owners));
  });
});
