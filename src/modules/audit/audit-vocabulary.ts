import { closedObject, Schema } from 'src/common/http/document-schema';
import { isStorableText } from 'src/common/http/text';

/** The closed audit action vocabulary (core spec section 6, CONTRACT.md 2.2). */
export const AUDIT_ACTIONS = [
  'workspace.create',
  'key.mint',
  'key.revoke',
  'key.rotate',
  'catalog.provider.register',
  'webhook.configure',
  'webhook.delete',
  'connection.start',
  'connection.credential.store',
  'connection.federated.complete',
  'connection.reconnect',
  'connection.disable',
  'connection.credential.purge',
  'connection.discard',
  'model_connection.start',
  'model_connection.credential.store',
  'model_connection.disable',
  'policy.draft.store',
  'policy.publish',
  'route_qualifier.upsert',
  'route_qualifier.delete',
  'approval.approve',
  'approval.deny',
  'approval_policy.create',
  'approval_policy.revise',
  'approval_policy.disable',
  'pricing.replace',
  'membership.grant',
  'membership.revoke',
  'notification_endpoint.create',
  'notification_endpoint.update',
  'notification_endpoint.delete',
  'notification_endpoint.rotate_secret',
  'notification_endpoint.disable',
] as const;

export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** The detail keys of the core specification's allow-list (section 2, Audit event): all the listing shows. */
export const SPEC_DETAIL_KEYS = new Set([
  'agent_id', 'bundle_hash', 'connection_id', 'env', 'key_id', 'last4', 'policy_id', 'prefix', 'provider_id',
  'publication_state', 'qualifier_id', 'reason', 'revision_id', 'snapshot_version', 'source', 'status', 'tier',
]);

/**
 * Keys stored beyond the allow-list: `tools_mode` and `scopes`, which the core spec names for the
 * `key.mint` detail (section 4, Virtual keys), and `model_pattern`, which the connections spec
 * names for `model_connection.*` details (section 4, Model providers). They stay in the stored
 * (and chained, and exported) row; the listing drops them (docs/audit.md).
 */
export const STORED_ONLY_DETAIL_KEYS = new Set(['tools_mode', 'scopes', 'model_pattern']);

/** Every key the writer keeps. */
export const DETAIL_KEYS = new Set([...SPEC_DETAIL_KEYS, ...STORED_ONLY_DETAIL_KEYS]);
const MAX_KEYS = 16;
const MAX_STRING = 256;
const MAX_LIST = 16;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

export type AuditDetailValue = string | boolean | number | string[];

function sanitizeValue(value: unknown): AuditDetailValue | undefined {
  if (typeof value === 'string') return value.length <= MAX_STRING && isStorableText(value) ? value : undefined;
  if (typeof value === 'boolean') return value;
  if (typeof value === 'number') {
    return Number.isSafeInteger(value) ? value : undefined;
  }
  if (typeof value === 'bigint') {
    return value >= INT64_MIN && value <= INT64_MAX && Number.isSafeInteger(Number(value)) ? Number(value) : undefined;
  }
  if (Array.isArray(value)) {
    if (value.length > MAX_LIST || !value.every((v) => typeof v === 'string' && v.length <= MAX_STRING && isStorableText(v))) return undefined;
    return value as string[];
  }
  return undefined;
}

/**
 * Keeps only the allowed keys with allowed values: strings up to 256 characters, booleans,
 * int64 numbers, lists of at most 16 such strings; at most 16 keys. Everything else is dropped,
 * text that would not hash losslessly (a NUL, a lone surrogate) included.
 */
export function sanitizeAuditDetail(detail: Record<string, unknown> | undefined): Record<string, AuditDetailValue> {
  const out: Record<string, AuditDetailValue> = {};
  if (!detail) return out;
  for (const key of Object.keys(detail).sort()) {
    if (Object.keys(out).length >= MAX_KEYS) break;
    if (!DETAIL_KEYS.has(key)) continue;
    const value = sanitizeValue(detail[key]);
    if (value !== undefined) out[key] = value;
  }
  return out;
}

export const MAX_AUDIT_EMAIL = 320;
export const MAX_AUDIT_TARGET = 256;

const detailValue: Schema = { type: ['string', 'boolean', 'integer', 'array'], items: { type: 'string' } };
const timestamp: Schema = { type: 'string', format: 'date-time' };

/** The published schema of the audit listing: the specification's allow-list, and nothing else. */
export const AUDIT_LIST_SCHEMA: Schema = closedObject({
  schema_version: { const: 1 },
  workspace_id: { type: 'string' },
  window: closedObject({ from: timestamp, to: timestamp }),
  events: {
    type: 'array',
    items: closedObject({
      schema_version: { const: 1 },
      event_id: { type: 'string' },
      workspace_id: { type: 'string' },
      actor: closedObject({ user_id: { type: ['string', 'null'] }, email: { type: ['string', 'null'] } }),
      action: { enum: [...AUDIT_ACTIONS] },
      target: { type: ['string', 'null'] },
      detail: { type: 'object', properties: Object.fromEntries([...SPEC_DETAIL_KEYS].map((k) => [k, detailValue])), additionalProperties: false },
      occurred_at: timestamp,
    }),
  },
  next_cursor: { type: ['string', 'null'] },
});
