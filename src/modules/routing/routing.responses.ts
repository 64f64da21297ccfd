import { Schema, closedObject, count, nullableText } from 'src/common/http/document-schema';
import { AUTH_MODES, EFFECT_KINDS, LANES } from 'src/modules/catalog/catalog.schema';
import { PUBLICATION_SCHEMA } from 'src/modules/publication/publication.responses';
import { DECISIONS, EVIDENCE_TRUST, INVOCATION_STATES } from 'src/modules/receipts/receipt-values';
import { EVIDENCE_RANKING } from 'src/modules/routing/dto/capability.document';
import { MAX_EXCLUDED } from 'src/modules/routing/dto/route-decision.document';
import { AUTH_PREFERENCES, MAX_PREFERENCES, SOURCE_PREFERENCES, SURFACE_PREFERENCES } from 'src/modules/routing/dto/qualifier.dto';
import { QUALIFIER_ID } from 'src/modules/routing/dto/qualifier.document';
import { MAX_CAPABILITY_ID, MAX_TARGET_LENGTH, MAX_TARGETS } from 'src/modules/routing/qualifiers.service';

const qualifierId: Schema = { type: 'string', pattern: QUALIFIER_ID.source };
const capabilityId: Schema = { type: 'string', pattern: '^cap\\.', maxLength: MAX_CAPABILITY_ID };
const target: Schema = { type: 'string', maxLength: MAX_TARGET_LENGTH };
const targets: Schema = { type: 'array', items: target, maxItems: MAX_TARGETS };
const preferences = (values: readonly string[]): Schema => ({ type: 'array', items: { enum: [...values] }, maxItems: MAX_PREFERENCES });

const QUALIFIER_FIELDS = closedObject({
  schema_version: { const: 1 },
  workspace_id: { type: 'string' },
  qualifier_id: qualifierId,
  revision: { type: 'integer', minimum: 1 },
  capability_id: capabilityId,
  constraint: {
    oneOf: [
      closedObject({ kind: { const: 'none' } }),
      closedObject({ kind: { const: 'only' }, targets }),
      closedObject({ kind: { const: 'ignore' }, targets }),
      closedObject({ kind: { const: 'pin' }, target }),
    ],
  },
  prefer_auth: preferences(AUTH_PREFERENCES),
  prefer_surface: preferences(SURFACE_PREFERENCES),
  prefer_sources: preferences(SOURCE_PREFERENCES),
  min_quality: { type: 'integer', minimum: 0, description: 'Basis points, 0-10000.' },
  max_cost_micros_usd: { type: ['integer', 'null'], minimum: 0 },
  allow_fallbacks: { type: 'boolean' },
  deleted: { const: false },
  publication: PUBLICATION_SCHEMA,
});

/** The `operator_route_qualifier` document; `capability_id` is omitted when the qualifier applies without one. */
export const QUALIFIER_SCHEMA: Schema = { ...QUALIFIER_FIELDS, required: QUALIFIER_FIELDS.required!.filter((name) => name !== 'capability_id') };

export const QUALIFIER_LIST_SCHEMA: Schema = closedObject({ qualifiers: { type: 'array', items: QUALIFIER_SCHEMA } });

/** The delete answer: the tombstone only, with the revision held at removal. */
export const QUALIFIER_TOMBSTONE_SCHEMA: Schema = closedObject({
  schema_version: { const: 1 },
  workspace_id: { type: 'string' },
  qualifier_id: qualifierId,
  revision: { type: 'integer', minimum: 1 },
  deleted: { const: true },
  publication: PUBLICATION_SCHEMA,
});

const CAPABILITY_SCHEMA: Schema = closedObject({
  capability_id: { type: 'string' },
  display_name: { type: 'string' },
  description: { type: 'string' },
  effect_kind: { enum: [...EFFECT_KINDS] },
  destructive: { type: 'boolean' },
  evidence_floor: { enum: ['untrusted', 'broker_attested', 'gateway_observed'] },
  status: { enum: ['active', 'declared'] },
  feature_vocabulary: { type: 'array', items: { type: 'string' } },
  catalog_bindings: count,
  active_bindings: count,
});

/** Every catalog capability as the workspace sees it, with the workspace's env. */
export const CAPABILITY_LIST_SCHEMA: Schema = closedObject({
  env: { enum: ['dev', 'stage', 'prod'] },
  capabilities: { type: 'array', items: CAPABILITY_SCHEMA },
});

const BINDING_SCHEMA: Schema = closedObject({
  binding_id: { type: 'string' },
  capability_id: { type: 'string' },
  capability: CAPABILITY_SCHEMA,
  tool: { type: 'string' },
  custody: { enum: ['native', 'trusted_worker', 'federated'] },
  surface: { enum: ['mcp', 'rest'] },
  auth_modes: { type: 'array', items: { enum: [...AUTH_MODES] } },
  catalog_source: { enum: [...LANES] },
  evidence_ceiling: { enum: [...EVIDENCE_RANKING] },
  meets_evidence_floor: { type: 'boolean' },
  cost: closedObject({ base_micros_usd: { type: ['integer', 'null'], minimum: 1 }, bundled_in_broker: { type: 'boolean' } }),
  quality_prior_bps: { type: 'integer', minimum: 0, description: 'A hand-authored prior in basis points, 0-10000.' },
  connected: { type: 'boolean' },
  coverage: { type: 'array', items: closedObject({ feature: { type: 'string' }, claim: { enum: ['supported'] }, fidelity: { enum: ['exact', 'mapped'] } }) },
  shared_quota: { type: 'boolean' },
  idempotency_propagation: { enum: ['forwarded', 'none'] },
  status: { enum: ['active', 'quarantined'] },
});

/** One capability and its bindings sorted by `binding_id`. */
export const BINDINGS_SCHEMA: Schema = closedObject({ capability: CAPABILITY_SCHEMA, bindings: { type: 'array', items: BINDING_SCHEMA } });

/** Route fields are what the gateway recorded on the receipt (null when unrecorded or of the wrong type). */
const DECISION_SCHEMA: Schema = closedObject({
  receipt_id: { type: 'string' },
  occurred_at: { type: 'string', format: 'date-time' },
  capability: nullableText,
  selected: nullableText,
  binding_id: nullableText,
  reason: { ...nullableText, description: '`best_score`, `only_candidate`, `pinned_by_policy`, `pinned_by_request`, `fallback_after_failure`' },
  surface: nullableText,
  catalog_source: nullableText,
  evidence_floor: nullableText,
  evidence_ceiling: nullableText,
  evidence_trust: { enum: [...EVIDENCE_TRUST] },
  state: { enum: [...INVOCATION_STATES] },
  decision: { enum: [...DECISIONS] },
  eligible_count: { type: ['integer', 'null'] },
  excluded_count: { type: 'integer', description: 'The recorded total, which may exceed the exclusions listed.' },
  excluded: { type: 'array', items: closedObject({ target: nullableText, binding_id: nullableText, reason: nullableText }), maxItems: MAX_EXCLUDED },
  algorithm_version: { type: ['integer', 'string', 'null'] },
  snapshot_version: { type: ['integer', 'null'] },
});

/** Route decisions newest first; `next_before` is null on the last page. */
export const ROUTE_DECISIONS_SCHEMA: Schema = closedObject({ decisions: { type: 'array', items: DECISION_SCHEMA }, next_before: nullableText });
