import { Schema, closedObject, nullableText, timestamp } from 'src/common/http/document-schema';
import {
  DECISIONS,
  DISPATCH_STATES,
  EFFECT_CLAIMS,
  EVIDENCE_TRUST,
  INVOCATION_STATES,
  VERIFICATION_METHODS,
  VERIFICATION_STATES,
} from 'src/modules/receipts/receipt-values';

const count: Schema = { type: ['integer', 'null'], minimum: 0 };

/** The receipt list projection (core spec section 2). */
export const RECEIPT_PROJECTION_SCHEMA: Schema = closedObject({
  receipt_id: { type: 'string' },
  receipt_revision: { type: 'integer', minimum: 1 },
  invocation_id: { type: 'string' },
  tool: nullableText,
  key_id: nullableText,
  connection_id: nullableText,
  state: { enum: [...INVOCATION_STATES] },
  decision: { enum: [...DECISIONS] },
  dispatch_state: { enum: [...DISPATCH_STATES] },
  evidence_trust: { enum: [...EVIDENCE_TRUST] },
  verification_state: { enum: [...VERIFICATION_STATES] },
  verification_method: { enum: [...VERIFICATION_METHODS] },
  effect_claim: { enum: [...EFFECT_CLAIMS, null] },
  verification_evidence_trust: { enum: [...EVIDENCE_TRUST, null] },
  vendor_http_status: count,
  upstream_id: nullableText,
  latency_ms: count,
  usd_micros: count,
  attempt_count: { type: 'integer', minimum: 0 },
  occurred_at: timestamp,
  updated_at: timestamp,
});

/** Receipt detail: the projection plus the detail fields and the whole recorded envelope. */
export const RECEIPT_DETAIL_SCHEMA: Schema = closedObject({
  ...RECEIPT_PROJECTION_SCHEMA.properties,
  idempotency_key: nullableText,
  request_id: nullableText,
  policy_id: nullableText,
  policy_revision_id: nullableText,
  envelope: { type: ['object', 'null'], description: 'The envelope as the gateway recorded it.' },
});

/** A page of receipts; `next_before` repeats `next_cursor` under its older name. */
export const RECEIPT_LIST_SCHEMA: Schema = closedObject({
  receipts: { type: 'array', items: RECEIPT_PROJECTION_SCHEMA },
  next_cursor: nullableText,
  next_before: nullableText,
});

export const RECEIPT_REVISIONS_SCHEMA: Schema = closedObject({
  revisions: { type: 'array', items: RECEIPT_PROJECTION_SCHEMA },
  next_before_revision: { type: ['integer', 'null'], minimum: 1 },
});
