import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { EntryReader } from 'src/modules/streams/entry-reader';
import { ParsedEntry, StreamProjector } from 'src/modules/streams/stream-projector';
import { ReceiptsRepository, RevisionValues } from 'src/modules/receipts/receipts.repository';
import {
  DECISIONS,
  DISPATCH_STATES,
  EFFECT_CLAIMS,
  EVIDENCE_TRUST,
  INVOCATION_STATES,
  VERIFICATION_METHODS,
  VERIFICATION_STATES,
} from 'src/modules/receipts/receipt-values';

/** One receipt revision as it is stored: column name to value, in column order. */
export type ReceiptRevision = RevisionValues;

/** Reads a receipt revision entry of `{prefix}:receipts` (CONTRACT.md 4.4). */
export function parseReceiptRevision(r: EntryReader): ReceiptRevision {
  const envelope = r.optionalObject('envelope');
  return {
    workspace_id: r.string('workspace_id', 64),
    invocation_id: r.string('invocation_id', 64),
    receipt_revision: r.int('receipt_revision', 1),
    receipt_id: r.string('receipt_id', 64),
    tool: r.optionalString('tool'),
    key_id: r.optionalString('key_id', 64),
    connection_id: r.optionalString('connection_id', 64),
    state: r.oneOf('state', INVOCATION_STATES),
    decision: r.oneOf('decision', DECISIONS),
    dispatch_state: r.oneOf('dispatch_state', DISPATCH_STATES),
    evidence_trust: r.oneOf('evidence_trust', EVIDENCE_TRUST),
    verification_state: r.oneOf('verification_state', VERIFICATION_STATES),
    verification_method: r.oneOf('verification_method', VERIFICATION_METHODS),
    effect_claim: r.optionalOneOf('effect_claim', EFFECT_CLAIMS),
    verification_evidence_trust: r.optionalOneOf('verification_evidence_trust', EVIDENCE_TRUST),
    vendor_http_status: r.optionalInt('vendor_http_status'),
    upstream_id: r.optionalString('upstream_id'),
    latency_ms: r.optionalInt('latency_ms'),
    usd_micros: r.optionalBigint('usd_micros'),
    attempt_count: r.int('attempt_count'),
    occurred_at: r.time('occurred_at'),
    updated_at: r.time('updated_at'),
    idempotency_key: r.optionalString('idempotency_key'),
    request_id: r.optionalString('request_id', 64),
    policy_id: r.optionalString('policy_id', 64),
    policy_revision_id: r.optionalString('policy_revision_id', 64),
    envelope: envelope === null ? null : JSON.stringify(envelope),
  };
}

/** The receipts read model's part of the stream consumer: parses revisions and projects them through ReceiptsRepository. */
@Injectable()
export class ReceiptsProjector implements StreamProjector<ReceiptRevision> {
  readonly stream = 'receipts';
  readonly partitioned = 'receipt_revisions';

  constructor(private readonly receipts: ReceiptsRepository) {}

  parse(reader: EntryReader) {
    const value = parseReceiptRevision(reader);
    return { workspaceId: value.workspace_id as string, value, partitionTime: value.occurred_at as Date };
  }

  project(manager: EntityManager, entries: ParsedEntry<ReceiptRevision>[]): Promise<void> {
    return this.receipts.project(manager, entries.map((e) => e.value));
  }

  /** Heads (and the overview count) of invocations older than the cutoff; revisions go with their partitions. */
  retain(manager: EntityManager, workspaceId: string, cutoff: Date, limit: number): Promise<number> {
    return this.receipts.retain(manager, workspaceId, cutoff, limit);
  }
}
