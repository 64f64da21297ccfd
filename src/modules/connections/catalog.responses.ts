import { Schema, closedObject, count, strings } from 'src/common/http/document-schema';
import { AUTH_MODES, LANES } from 'src/modules/catalog/catalog.schema';
import { CONNECTION_SCHEMA } from 'src/modules/connections/connections.responses';

const head: Record<string, Schema> = { schema_version: { const: 1 }, generated_at: { type: 'string', format: 'date-time' } };

const ENTRY_FIELDS: Record<string, Schema> = {
  slug: { type: 'string' },
  display_name: { type: 'string' },
  description: { type: 'string' },
  categories: strings,
  default_tier: { enum: ['native', 'federated'] },
};
const source: Record<string, Schema> = { provider: { enum: [...LANES] }, auth_modes: { type: 'array', items: { enum: [...AUTH_MODES] } } };
const connections: Schema = { type: 'array', items: CONNECTION_SCHEMA, description: "This workspace's connections on the slug." };

/** A full catalog row (the single-entry read; the unfiltered index adds `connections`). */
export const CATALOG_ROW_SCHEMA: Schema = closedObject({
  ...ENTRY_FIELDS,
  sources: {
    type: 'array',
    items: closedObject({ ...source, mcp: { type: 'boolean' }, allowed_mcp_origins: { type: 'array', items: { type: 'string', format: 'uri' } }, upstream_id: { type: 'string' } }),
  },
});

const FULL_INDEX: Schema = closedObject({
  ...head,
  connectors: { type: 'array', items: closedObject({ ...CATALOG_ROW_SCHEMA.properties, connections }) },
});

const BROWSE_PAGE: Schema = closedObject({
  ...head,
  connectors: { type: 'array', items: closedObject({ ...ENTRY_FIELDS, sources: { type: 'array', items: closedObject(source) }, connections }) },
  categories: { type: 'array', items: closedObject({ name: { type: 'string' }, count }) },
  lanes: { type: 'array', items: closedObject({ source: { enum: [...LANES] }, count }), minItems: LANES.length, maxItems: LANES.length },
  lane_overlap: count,
  page: closedObject({ total: count, limit: { type: 'integer', minimum: 1 }, offset: count, next_cursor: { type: ['string', 'null'], maxLength: 128 } }),
});

/** The catalog index: the whole frozen catalog without a browse parameter, else a browse page (discriminated by `page`). */
export const CATALOG_INDEX_SCHEMA: Schema = { oneOf: [FULL_INDEX, BROWSE_PAGE] };
