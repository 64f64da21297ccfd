import { formatTimeRequired } from 'src/common/time/time';

/** The list projection columns, as stored in `receipt_heads` and `receipt_revisions`. */
export const PROJECTION_COLUMNS = [
  'receipt_id', 'receipt_revision', 'invocation_id', 'tool', 'key_id', 'connection_id', 'state', 'decision', 'dispatch_state',
  'evidence_trust', 'verification_state', 'verification_method', 'effect_claim', 'verification_evidence_trust',
  'vendor_http_status', 'upstream_id', 'latency_ms', 'usd_micros', 'attempt_count', 'occurred_at', 'updated_at',
] as const;
export const DETAIL_COLUMNS = [...PROJECTION_COLUMNS, 'idempotency_key', 'request_id', 'policy_id', 'policy_revision_id', 'envelope'] as const;

export interface ReceiptRow {
  receipt_id: string;
  receipt_revision: number;
  invocation_id: string;
  tool: string | null;
  key_id: string | null;
  connection_id: string | null;
  state: string;
  decision: string;
  dispatch_state: string;
  evidence_trust: string;
  verification_state: string;
  verification_method: string;
  effect_claim: string | null;
  verification_evidence_trust: string | null;
  vendor_http_status: number | null;
  upstream_id: string | null;
  latency_ms: number | null;
  /** int8 arrives as a decimal string. */
  usd_micros: string | null;
  attempt_count: number;
  occurred_at: Date;
  updated_at: Date;
}

export interface ReceiptDetailRow extends ReceiptRow {
  idempotency_key: string | null;
  request_id: string | null;
  policy_id: string | null;
  policy_revision_id: string | null;
  envelope: Record<string, unknown> | null;
}

/** The receipt list projection (core spec section 2); `usd_micros` is a bigint, written as an exact JSON integer. */
export function toReceiptProjection(row: ReceiptRow) {
  return {
    receipt_id: row.receipt_id,
    receipt_revision: row.receipt_revision,
    invocation_id: row.invocation_id,
    tool: row.tool,
    key_id: row.key_id,
    connection_id: row.connection_id,
    state: row.state,
    decision: row.decision,
    dispatch_state: row.dispatch_state,
    evidence_trust: row.evidence_trust,
    verification_state: row.verification_state,
    verification_method: row.verification_method,
    effect_claim: row.effect_claim,
    verification_evidence_trust: row.verification_evidence_trust,
    vendor_http_status: row.vendor_http_status,
    upstream_id: row.upstream_id,
    latency_ms: row.latency_ms,
    usd_micros: row.usd_micros === null ? null : BigInt(row.usd_micros),
    attempt_count: row.attempt_count,
    occurred_at: formatTimeRequired(row.occurred_at),
    updated_at: formatTimeRequired(row.updated_at),
  };
}

/** Receipt detail: the projection plus the detail fields and the whole recorded envelope. */
export function toReceiptDetail(row: ReceiptDetailRow) {
  return {
    ...toReceiptProjection(row),
    idempotency_key: row.idempotency_key,
    request_id: row.request_id,
    policy_id: row.policy_id,
    policy_revision_id: row.policy_revision_id,
    envelope: row.envelope,
  };
}
