import { Schema } from 'src/common/http/document-schema';
import PUBLISHED_SNAPSHOT_SCHEMA from 'src/modules/publication/snapshot.schema.json';

type Json = unknown;

/** `schema` with every `#/$defs/...` reference replaced by its definition (siblings of a reference kept). */
function inlineDefinitions(schema: Record<string, Json>): Schema {
  const { $schema: _dialect, $id: _id, $defs: defs, ...root } = schema as { $defs: Record<string, Json> } & Record<string, Json>;
  const walk = (value: Json): Json => {
    if (Array.isArray(value)) return value.map(walk);
    if (value === null || typeof value !== 'object') return value;
    const { $ref: target, ...rest } = value as Record<string, Json>;
    const siblings = Object.fromEntries(Object.entries(rest).map(([k, v]) => [k, walk(v)]));
    if (typeof target !== 'string') return siblings;
    const definition = walk(defs[target.replace('#/$defs/', '')]) as Record<string, Json>;
    return Object.keys(siblings).some((k) => k in definition) ? { allOf: [definition, siblings] } : { ...definition, ...siblings };
  };
  return walk(root) as Schema;
}

/** The workspace snapshot: the published JSON Schema `src/modules/publication/snapshot.schema.json`, self-contained. */
export const SNAPSHOT_SCHEMA: Schema = inlineDefinitions(PUBLISHED_SNAPSHOT_SCHEMA as Record<string, Json>);
