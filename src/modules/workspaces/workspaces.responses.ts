import { ROLES } from 'src/platform/access/actions';
import { Schema, closedObject, count, env, id, timestamp } from 'src/common/http/document-schema';

const role: Schema = { enum: [...ROLES] };
const url: Schema = { type: 'string', format: 'uri' };

/** A workspace (core spec section 2). */
export const WORKSPACE_SCHEMA: Schema = closedObject({
  id,
  org_id: id,
  slug: { type: 'string' },
  env,
  frozen: { type: 'boolean' },
  snapshot_version: { type: 'integer', minimum: 1 },
});

export const WORKSPACE_LIST_SCHEMA: Schema = closedObject({ workspaces: { type: 'array', items: WORKSPACE_SCHEMA } });

/** `GET /me`: the operator and every workspace of theirs with their role. */
export const PROFILE_SCHEMA: Schema = closedObject({
  user: closedObject({ id, email: { type: ['string', 'null'] } }),
  workspaces: {
    type: 'array',
    items: closedObject({ id, org_id: id, slug: { type: 'string' }, env, frozen: { type: 'boolean' }, role }),
  },
  default_workspace_id: id,
});

/** The overview: measured numbers only; an empty workspace reports zeroes and nulls. */
export const OVERVIEW_SCHEMA: Schema = closedObject({
  workspace: WORKSPACE_SCHEMA,
  keys: closedObject({ active: count, total: count }),
  connectors: closedObject({ total: count, connections_active: count }),
  policy: {
    oneOf: [
      closedObject({ published: { const: false }, revision_id: { type: 'null' }, published_at: { type: 'null' }, bundle_hash: { type: 'null' } }),
      closedObject({ published: { const: true }, revision_id: id, published_at: timestamp, bundle_hash: { type: 'string', pattern: '^sha256:[0-9a-f]{64}$' } }),
    ],
  },
  receipts: closedObject({ total: count, last_at: { type: ['string', 'null'], format: 'date-time' } }),
});

/** The client endpoints document: addresses only, never key material. */
export const CLIENT_ENDPOINTS_SCHEMA: Schema = closedObject({
  workspace_id: id,
  env,
  gateway_url: url,
  mcp_url: url,
  llm_base_url: url,
  key_prefix: { enum: ['ob_live', 'ob_test'] },
});

/** A workspace member. */
export const MEMBER_SCHEMA: Schema = closedObject({ user_id: id, email: { type: ['string', 'null'] }, role, created_at: timestamp });

export const MEMBER_LIST_SCHEMA: Schema = closedObject({ members: { type: 'array', items: MEMBER_SCHEMA } });
