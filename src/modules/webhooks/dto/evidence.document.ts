import { formatTimeRequired } from 'src/common/time/time';

export type Correlation = 'matched' | 'unmatched' | 'ambiguous';

export interface EvidenceResult {
  name: string;
  outcome: string;
  trust: string;
}

export interface EvidenceRow {
  evidence_id: string;
  workspace_id: string;
  connection_id: string;
  subscription_id: string;
  event_type: string;
  provider_event_id: string;
  upstream_id: string | null;
  idempotency_key: string | null;
  trust: string;
  signature_profile: string;
  key_version: number;
  body_digest: string;
  batch_position: number | null;
  results: EvidenceResult[];
  received_at: Date;
  content_digest: string;
  correlation: Correlation;
  receipt_id: string | null;
  stage: string | null;
}

export const EVIDENCE_COLUMNS = `evidence_id, workspace_id, connection_id, subscription_id, event_type, provider_event_id, upstream_id,
  idempotency_key, trust, signature_profile, key_version, body_digest, batch_position, results, received_at, content_digest,
  correlation, receipt_id, stage`;

/** The immutable evidence event (spec section 2) and, apart from it, control's correlation. */
export function toEvidenceDocument(row: EvidenceRow) {
  return {
    schema_version: 1,
    evidence_id: row.evidence_id,
    workspace_id: row.workspace_id,
    connection_id: row.connection_id,
    subscription_id: row.subscription_id,
    event_type: row.event_type,
    provider_event_id: row.provider_event_id,
    upstream_id: row.upstream_id,
    idempotency_key: row.idempotency_key,
    trust: row.trust,
    signature_profile: row.signature_profile,
    key_version: row.key_version,
    body_digest: row.body_digest,
    batch_position: row.batch_position,
    results: row.results,
    received_at: formatTimeRequired(row.received_at),
    correlation: { state: row.correlation, receipt_id: row.receipt_id, stage: row.stage },
  };
}
