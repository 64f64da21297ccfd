import { Client } from 'pg';
import { EntityMetadata } from 'typeorm';

/** A column as both sides describe it: a normalized type (`timestamptz(3)`, `text[]`), nullability. */
export interface ColumnShape {
  name: string;
  type: string;
  nullable: boolean;
}

/** A table, or an entity's view of one; `identity` is the primary key's columns, sorted. */
export interface TableShape {
  table: string;
  columns: ColumnShape[];
  identity: string[];
}

export interface EntityShape extends TableShape {
  entity: string;
}

/** TypeORM's aliases of one PostgreSQL type, named as `format_type` names them after `canonicalType`. */
const ALIASES: Record<string, string> = {
  int: 'integer',
  int4: 'integer',
  int8: 'bigint',
  int2: 'smallint',
  bool: 'boolean',
  'timestamp with time zone': 'timestamptz',
  'timestamp without time zone': 'timestamp',
  'character varying': 'varchar',
  decimal: 'numeric',
  float8: 'double precision',
  float4: 'real',
};

/** `format_type` output in the short names: `timestamp(3) with time zone` -> `timestamptz(3)`. */
function canonicalType(formatted: string): string {
  return formatted
    .replace(/^timestamp(\(\d\))? with time zone/, (_, p: string | undefined) => `timestamptz${p ?? ''}`)
    .replace(/^timestamp(\(\d\))? without time zone/, (_, p: string | undefined) => `timestamp${p ?? ''}`)
    .replace(/^character varying/, 'varchar');
}

/**
 * Every table of the public schema the migrations created, as PostgreSQL describes it: ordinary and
 * partitioned tables, not the partitions themselves, not TypeORM's migrations table. A table without
 * a primary key is identified by its one UNIQUE constraint (the usage rollups and gaps).
 */
export async function describeDatabase(client: Client, migrationsTable: string): Promise<TableShape[]> {
  const { rows } = await client.query<{ table: string; columns: { name: string; type: string; nullable: boolean }[]; pk: string[] | null; uniques: string[][] | null }>(
    `SELECT c.relname AS table,
       (SELECT json_agg(json_build_object('name', a.attname, 'type', format_type(a.atttypid, a.atttypmod), 'nullable', NOT a.attnotnull) ORDER BY a.attnum)
          FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped) AS columns,
       (SELECT array_agg(a.attname::text ORDER BY a.attname) FROM pg_constraint k JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = ANY (k.conkey)
          WHERE k.conrelid = c.oid AND k.contype = 'p') AS pk,
       (SELECT json_agg((SELECT array_agg(a.attname::text ORDER BY a.attname) FROM pg_attribute a WHERE a.attrelid = k.conrelid AND a.attnum = ANY (k.conkey)))
          FROM pg_constraint k WHERE k.conrelid = c.oid AND k.contype = 'u') AS uniques
     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition AND c.relname <> $1
     ORDER BY c.relname`,
    [migrationsTable],
  );
  return rows.map((r) => ({
    table: r.table,
    columns: r.columns.map((c) => ({ name: c.name, type: canonicalType(c.type), nullable: c.nullable })),
    identity: r.pk ?? (r.uniques?.length === 1 ? r.uniques[0] : []),
  }));
}

/** The entities' side: each column's declared type (aliases resolved, precision and array kept). */
export function describeEntities(metadatas: EntityMetadata[]): EntityShape[] {
  return metadatas.map((m) => ({
    entity: m.name,
    table: m.tableName,
    columns: m.columns.map((c) => {
      const declared = typeof c.type === 'string' ? c.type : `(no explicit type: ${c.type.name})`;
      const base = ALIASES[declared] ?? declared;
      const precision = c.precision !== null && c.precision !== undefined ? `(${c.precision}${c.scale !== undefined ? `,${c.scale}` : ''})` : c.length ? `(${c.length})` : '';
      return { name: c.databaseName, type: `${base}${precision}${c.isArray ? '[]' : ''}`, nullable: c.isNullable };
    }),
    identity: m.primaryColumns.map((c) => c.databaseName).sort(),
  }));
}

/**
 * Every difference between the migrated schema and the entities, one readable line each; empty
 * when they agree: each table has exactly one entity and each column the same name, type,
 * nullability and place in the primary key.
 */
export function compareSchema(tables: TableShape[], entities: EntityShape[]): string[] {
  const differences: string[] = [];
  for (const entity of entities) {
    if (!tables.some((t) => t.table === entity.table)) differences.push(`entity ${entity.entity}: maps table ${entity.table}, which the migrations do not create`);
  }
  for (const table of tables) {
    const mapped = entities.filter((e) => e.table === table.table);
    if (mapped.length !== 1) {
      differences.push(`table ${table.table}: ${mapped.length === 0 ? 'no entity' : `${mapped.length} entities (${mapped.map((e) => e.entity).join(', ')})`}`);
      continue;
    }
    const [entity] = mapped;
    for (const column of table.columns) {
      const declared = entity.columns.find((c) => c.name === column.name);
      if (!declared) {
        differences.push(`${table.table}.${column.name}: missing from entity ${entity.entity}`);
        continue;
      }
      if (declared.type !== column.type) differences.push(`${table.table}.${column.name}: type ${declared.type} in ${entity.entity}, ${column.type} in the database`);
      if (declared.nullable !== column.nullable) {
        differences.push(`${table.table}.${column.name}: ${declared.nullable ? 'nullable' : 'not null'} in ${entity.entity}, ${column.nullable ? 'nullable' : 'not null'} in the database`);
      }
    }
    for (const declared of entity.columns) {
      if (!table.columns.some((c) => c.name === declared.name)) differences.push(`${table.table}.${declared.name}: in entity ${entity.entity}, not in the database`);
    }
    if (entity.identity.join(',') !== table.identity.join(',')) {
      differences.push(`${table.table}: primary key (${entity.identity.join(', ')}) in ${entity.entity}, (${table.identity.join(', ')}) in the database`);
    }
  }
  return differences;
}
