import { EntityManager } from 'typeorm';
import { arrayLiteral } from 'src/modules/streams/array-literal';
import { EntryReader } from 'src/modules/streams/entry-reader';
import { ParsedEntry, StreamProjector } from 'src/modules/streams/streams.service';
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
export type ReceiptRevision = Record<(typeof COLUMNS)[number][0], string | number | Date | null>;

/** Columns of `receipt_revisions` with their SQL types; the first 22 are also the head's. */
const COLUMNS = [
  ['workspace_id', 'text'],
  ['invocation_id', 'text'],
  ['receipt_revision', 'int'],
  ['receipt_id', 'text'],
  ['tool', 'text'],
  ['key_id', 'text'],
  ['connection_id', 'text'],
  ['state', 'text'],
  ['decision', 'text'],
  ['dispatch_state', 'text'],
  ['evidence_trust', 'text'],
  ['verification_state', 'text'],
  ['verification_method', 'text'],
  ['effect_claim', 'text'],
  ['verification_evidence_trust', 'text'],
  ['vendor_http_status', 'int'],
  ['upstream_id', 'text'],
  ['latency_ms', 'int'],
  ['usd_micros', 'bigint'],
  ['attempt_count', 'int'],
  ['occurred_at', 'timestamptz'],
  ['updated_at', 'timestamptz'],
  ['idempotency_key', 'text'],
  ['request_id', 'text'],
  ['policy_id', 'text'],
  ['policy_revision_id', 'text'],
  ['envelope', 'jsonb'],
] as const;
const HEAD_COLUMNS = COLUMNS.slice(0, 22).map(([name]) => name);
const ALL = COLUMNS.map(([name]) => name).join(', ');
const HEAD = HEAD_COLUMNS.join(', ');

/**
 * One statement per batch: every revision is inserted as an immutable row (a redelivery is a
 * no-op), the newest incoming revision of each invocation replaces the head only when it is
 * strictly newer and of the same workspace, and the per-workspace counter of the overview grows
 * by the heads actually created.
 */
// hand-written: the stream projection, one unnest-batched statement per batch (single-row writes are fsync-bound; bench/read-models).
const PROJECT = `
  WITH incoming AS (
    SELECT * FROM unnest(${COLUMNS.map(([, type], i) => `$${i + 1}::${type}[]`).join(', ')}) AS t(${ALL})
  ), revisions AS (
    INSERT INTO receipt_revisions (${ALL}) SELECT ${ALL} FROM incoming ON CONFLICT DO NOTHING
  ), newest AS (
    SELECT DISTINCT ON (invocation_id) ${HEAD} FROM incoming ORDER BY invocation_id, receipt_revision DESC
  ), heads AS (
    INSERT INTO receipt_heads AS h (${HEAD}) SELECT ${HEAD} FROM newest
    ON CONFLICT (invocation_id) DO UPDATE SET ${HEAD_COLUMNS.filter((c) => c !== 'invocation_id' && c !== 'workspace_id')
      .map((c) => `${c} = EXCLUDED.${c}`)
      .join(', ')}
    WHERE h.receipt_revision < EXCLUDED.receipt_revision AND h.workspace_id = EXCLUDED.workspace_id
    RETURNING h.workspace_id, h.xmax = 0 AS created, h.occurred_at
  )
  INSERT INTO receipt_counters AS c (workspace_id, total, last_at)
  SELECT workspace_id, count(*) FILTER (WHERE created), max(occurred_at) FROM heads GROUP BY workspace_id ORDER BY workspace_id
  ON CONFLICT (workspace_id) DO UPDATE SET total = c.total + EXCLUDED.total, last_at = GREATEST(c.last_at, EXCLUDED.last_at)`;

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

export const receiptsProjector: StreamProjector<ReceiptRevision> = {
  stream: 'receipts',
  partitioned: 'receipt_revisions',

  parse(reader) {
    const value = parseReceiptRevision(reader);
    return { workspaceId: value.workspace_id as string, value, partitionTime: value.occurred_at as Date };
  },

  async project(manager: EntityManager, entries: ParsedEntry<ReceiptRevision>[]) {
    // Times travel as ISO strings (a Date would be written in its local-time form).
    await manager.query(
      PROJECT,
      COLUMNS.map(([name, type]) =>
        arrayLiteral(type === 'timestamptz' ? entries.map((e) => (e.value[name] as Date).toISOString()) : entries.map((e) => e.value[name] as string | number | null)),
      ),
    );
  },

  /** Heads (and the overview count) of invocations older than the cutoff; revisions go with their partitions. */
  async retain(manager: EntityManager, workspaceId: string, cutoff: Date, limit: number) {
    const [{ deleted }]: { deleted: number }[] = await manager.query(
      `WITH gone AS (
         DELETE FROM receipt_heads WHERE invocation_id IN (
           SELECT invocation_id FROM receipt_heads WHERE workspace_id = $1 AND occurred_at < $2 LIMIT $3
         ) RETURNING 1
       ), counted AS (
         UPDATE receipt_counters SET total = total - (SELECT count(*) FROM gone) WHERE workspace_id = $1 AND EXISTS (SELECT FROM gone)
       )
       SELECT count(*)::int AS deleted FROM gone`,
      [workspaceId, cutoff, limit],
    );
    return deleted;
  },
};
