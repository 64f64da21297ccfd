import { Schema, nullableTimestamp, timestamp } from 'src/common/http/document-schema';

/** The `publication` object of the documents that report one (`toPublication`): `published_version` once a version has published. */
export const PUBLICATION_SCHEMA: Schema = {
  type: 'object',
  properties: {
    state: { enum: ['published', 'pending'] },
    requested_version: { type: 'integer', minimum: 1 },
    published_version: { type: 'integer', minimum: 1 },
  },
  required: ['state', 'requested_version'],
  additionalProperties: false,
};

const DIGEST: Schema = { type: 'string', pattern: '^sha256:[0-9a-f]{64}$' };

/** One gateway instance of the rollout view (and the answer to its applied report). */
export const ROLLOUT_INSTANCE_SCHEMA: Schema = {
  type: 'object',
  properties: {
    instance_id: { type: 'string', maxLength: 128 },
    version: { type: 'integer', minimum: 1 },
    digest: DIGEST,
    applied_at: timestamp,
    state: { enum: ['current', 'behind', 'stale'] },
  },
  required: ['instance_id', 'version', 'digest', 'applied_at', 'state'],
  additionalProperties: false,
};

/** GET /api/v1/workspaces/{ws}/publication. */
export const ROLLOUT_SCHEMA: Schema = {
  type: 'object',
  properties: {
    workspace_id: { type: 'string' },
    snapshot_version: { type: 'integer', minimum: 1 },
    published_version: { type: 'integer', minimum: 0 },
    digest: { oneOf: [{ type: 'null' }, DIGEST] },
    published_at: nullableTimestamp,
    instances: { type: 'array', items: ROLLOUT_INSTANCE_SCHEMA },
    converged: { type: 'boolean' },
    converged_at: nullableTimestamp,
  },
  required: ['workspace_id', 'snapshot_version', 'published_version', 'digest', 'published_at', 'instances', 'converged', 'converged_at'],
  additionalProperties: false,
};

/** GET /api/v1/workspaces/{ws}/publication/versions. */
export const VERSION_LIST_SCHEMA: Schema = {
  type: 'object',
  properties: {
    workspace_id: { type: 'string' },
    versions: {
      type: 'array',
      items: {
        type: 'object',
        properties: { version: { type: 'integer', minimum: 1 }, digest: DIGEST, size: { type: 'integer', minimum: 1 }, published_at: timestamp, cause: { type: ['string', 'null'] } },
        required: ['version', 'digest', 'size', 'published_at', 'cause'],
        additionalProperties: false,
      },
    },
    next_cursor: { type: ['string', 'null'] },
  },
  required: ['workspace_id', 'versions', 'next_cursor'],
  additionalProperties: false,
};

const SECTION_DIFF: Schema = {
  type: 'object',
  properties: {
    added: { type: 'array', items: { type: 'string' } },
    removed: { type: 'array', items: { type: 'string' } },
    changed: {
      type: 'array',
      items: { type: 'object', properties: { id: { type: 'string' }, fields: { type: 'array', items: { type: 'string' } } }, required: ['id', 'fields'], additionalProperties: false },
    },
  },
  required: ['added', 'removed', 'changed'],
  additionalProperties: false,
};
/** The snapshot sections a version diff compares (each keyed in `snapshot-history.service.ts`). */
export const SNAPSHOT_SECTIONS = ['policy', 'approval_rules', 'connections', 'models', 'route_qualifiers', 'pricebook', 'webhook_subscriptions'] as const;
const VERSION_REF: Schema = { type: 'object', properties: { version: { type: 'integer', minimum: 1 }, digest: DIGEST }, required: ['version', 'digest'], additionalProperties: false };

/** GET /api/v1/workspaces/{ws}/publication/diff: entry ids and changed field names by section, never a value. */
export const VERSION_DIFF_SCHEMA: Schema = {
  type: 'object',
  properties: {
    workspace_id: { type: 'string' },
    from: VERSION_REF,
    to: VERSION_REF,
    sections: { type: 'object', properties: Object.fromEntries(SNAPSHOT_SECTIONS.map((s) => [s, SECTION_DIFF])), required: [...SNAPSHOT_SECTIONS], additionalProperties: false },
  },
  required: ['workspace_id', 'from', 'to', 'sections'],
  additionalProperties: false,
};
