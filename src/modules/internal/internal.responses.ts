import { closedObject, Schema } from 'src/common/http/document-schema';

const parts: Schema = { type: 'array', items: { type: 'object' } };

/**
 * The workspace snapshot: its header, and each part at the level of detail docs/snapshot.schema.json
 * refines (that file is the published schema; the image ships src/ only, so it is not read here).
 */
export const SNAPSHOT_SCHEMA: Schema = closedObject({
  schema_version: { const: 1 },
  workspace_id: { type: 'string' },
  env: { enum: ['dev', 'stage', 'prod'] },
  version: { type: 'integer', minimum: 1 },
  generated_at: { type: 'string', format: 'date-time' },
  policy: { type: ['object', 'null'] },
  approval_rules: { type: 'object' },
  connections: parts,
  models: parts,
  route_qualifiers: parts,
  pricebook: { type: ['object', 'null'] },
  webhook_subscriptions: parts,
});
