import { Schema, closedObject, id, nullableText, timestamp } from 'src/common/http/document-schema';
import { EVIDENCE_TRUST } from 'src/modules/receipts/receipt-values';
import { PUBLICATION_SCHEMA } from 'src/modules/publication/publication.responses';
import { MAX_RESULTS, RESULT_OUTCOMES, SUBSCRIPTION_ID } from 'src/modules/webhooks/dto/evidence.dto';
import { MAX_SIGNING_KEYS, MAX_TOLERANCE_SECONDS } from 'src/modules/webhooks/dto/subscription.schema';
import { SIGNATURE_PROFILE_NAMES } from 'src/modules/webhooks/signatures/signature-profiles';

const keyVersion: Schema = { type: 'integer', minimum: 1 };
const profile: Schema = { enum: [...SIGNATURE_PROFILE_NAMES] };
const subscriptionId: Schema = { type: 'string', pattern: SUBSCRIPTION_ID.source };

/** A webhook subscription as operators see it: key versions and validity windows, never key material. */
export const SUBSCRIPTION_SCHEMA: Schema = closedObject({
  schema_version: { const: 1 },
  subscription_id: subscriptionId,
  workspace_id: id,
  connection_id: id,
  signature_profile: profile,
  trust: { enum: ['vendor_signed', 'broker_attested', null] },
  tolerance_seconds: { type: 'integer', minimum: 1, description: `At most ${MAX_TOLERANCE_SECONDS}.` },
  notification_url: nullableText,
  signing_keys: {
    type: 'array',
    minItems: 1,
    maxItems: MAX_SIGNING_KEYS,
    items: closedObject({ key_version: keyVersion, key_id: id, last4: { type: 'string', pattern: '^[\\x21-\\x7e]{4}$' }, valid_from: timestamp, valid_until: timestamp }),
  },
  revision: { type: 'integer', minimum: 1 },
  created_at: timestamp,
  updated_at: timestamp,
  publication: PUBLICATION_SCHEMA,
});

export const SUBSCRIPTION_LIST_SCHEMA: Schema = closedObject({ subscriptions: { type: 'array', items: SUBSCRIPTION_SCHEMA } });

/** The immutable webhook evidence event (connections spec section 2) and, apart from it, control's correlation. */
export const EVIDENCE_SCHEMA: Schema = closedObject({
  schema_version: { const: 1 },
  evidence_id: { type: 'string', pattern: '^evd_[A-Za-z0-9_-]{1,64}$' },
  workspace_id: id,
  connection_id: id,
  subscription_id: subscriptionId,
  event_type: id,
  provider_event_id: id,
  upstream_id: nullableText,
  idempotency_key: nullableText,
  trust: { enum: ['vendor_signed', 'broker_attested'] },
  signature_profile: profile,
  key_version: keyVersion,
  body_digest: { type: 'string', pattern: '^[0-9a-f]{64}$' },
  batch_position: { type: ['integer', 'null'], minimum: 0 },
  results: {
    type: 'array',
    maxItems: MAX_RESULTS,
    items: closedObject({ name: id, outcome: { enum: [...RESULT_OUTCOMES] }, trust: { enum: [...EVIDENCE_TRUST] } }),
  },
  received_at: timestamp,
  correlation: closedObject({ state: { enum: ['matched', 'unmatched', 'ambiguous'] }, receipt_id: nullableText, stage: nullableText }),
});
