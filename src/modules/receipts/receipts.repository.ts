import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { sha256Hex } from 'src/common/crypto/crypto';
import { namedQuery } from 'src/database/named-query';
import { DETAIL_COLUMNS, PROJECTION_COLUMNS, ReceiptDetailRow, ReceiptRow } from 'src/modules/receipts/dto/receipt.document';
import { ReceiptCounter } from 'src/modules/receipts/entities/receipt-counter.entity';
import { arrayLiteral } from 'src/modules/streams/array-literal';

/** Columns of `receipt_revisions` with their SQL types, in the order a stream entry is projected; the first 22 are also the head's. */
export const REVISION_COLUMNS = [
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

/** One receipt revision as it is stored: column name to value, in column order. */
export type RevisionValues = Record<(typeof REVISION_COLUMNS)[number][0], string | number | Date | null>;

const HEAD_COLUMNS = REVISION_COLUMNS.slice(0, 22).map(([name]) => name);
const ALL = REVISION_COLUMNS.map(([name]) => name).join(', ');
const HEAD = HEAD_COLUMNS.join(', ');
const PROJECTION = PROJECTION_COLUMNS.join(', ');
const DETAIL = DETAIL_COLUMNS.map((c) => `r.${c}`).join(', ');

/**
 * One statement per batch: every revision is inserted as an immutable row (a redelivery is a
 * no-op), the newest incoming revision of each invocation replaces the head only when it is
 * strictly newer and of the same workspace, and the per-workspace counter of the overview grows
 * by the heads actually created.
 */
// hand-written: the stream projection, one unnest-batched statement per batch (single-row writes are fsync-bound; bench/read-models).
const PROJECT = `
  WITH incoming AS (
    SELECT * FROM unnest(${REVISION_COLUMNS.map(([, type], i) => `$${i + 1}::${type}[]`).join(', ')}) AS t(${ALL})
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

/** The invocation behind any of its receipt ids, provided its head belongs to the workspace. */
const INVOCATION = `(SELECT h.invocation_id FROM receipt_revisions x JOIN receipt_heads h ON h.invocation_id = x.invocation_id AND h.workspace_id = x.workspace_id
                     WHERE x.workspace_id = $1 AND x.receipt_id = $2 LIMIT 1)`;

/** A receipts list page: its filters as SQL over `receipt_heads` (parameters from $2; $1 is the workspace) and their values. */
export interface HeadsPage {
  where: string[];
  values: unknown[];
  limit: number;
}

/** `receipt_revisions`, `receipt_heads` and `receipt_counters`: the receipts read model, its projection and its retention. */
@Injectable()
export class ReceiptsRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Projects a batch of revisions (any mix of workspaces) in the caller's transaction; idempotent. */
  async project(manager: EntityManager, revisions: RevisionValues[]): Promise<void> {
    // Times travel as ISO strings (a Date would be written in its local-time form).
    await manager.query(
      PROJECT,
      REVISION_COLUMNS.map(([name, type]) =>
        arrayLiteral(type === 'timestamptz' ? revisions.map((r) => (r[name] as Date).toISOString()) : revisions.map((r) => r[name] as string | number | null)),
      ),
    );
  }

  /** Deletes at most `limit` heads of the workspace older than `cutoff` and takes them off its counter, in the caller's transaction. */
  async retain(manager: EntityManager, workspaceId: string, cutoff: Date, limit: number): Promise<number> {
    // hand-written: a bounded DELETE (LIMIT in a subquery) and the counter update over what it deleted, in one statement.
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
  }

  /** The workspace's receipt counter of the overview, or null before its first receipt. */
  counter(workspaceId: string): Promise<ReceiptCounter | null> {
    return this.dataSource.manager.findOne(ReceiptCounter, { where: { workspaceId } });
  }

  /** Newest first on (occurred_at, receipt_id), one row per invocation, `limit` rows at most. */
  heads(workspaceId: string, page: HeadsPage): Promise<ReceiptRow[]> {
    const values = [workspaceId, ...page.values, page.limit];
    // hand-written: a keyset page as a named statement (prepared once per connection; unnamed ones run at half the rate; bench/read-models).
    const text = `SELECT ${PROJECTION} FROM receipt_heads WHERE ${['workspace_id = $1', ...page.where].join(' AND ')}
                  ORDER BY occurred_at DESC, receipt_id DESC LIMIT $${values.length}`;
    return namedQuery<ReceiptRow>(this.dataSource, { name: `receipts_${sha256Hex(text).slice(0, 16)}`, text }, values);
  }

  /** The newest revision of the invocation behind any of its receipt ids, or the one `revision` names. */
  async detail(workspaceId: string, receiptId: string, revision: number | null): Promise<ReceiptDetailRow | undefined> {
    // hand-written: one statement finds the invocation behind any of its receipt ids and joins its revision.
    const rows: ReceiptDetailRow[] = await this.dataSource.query(
      `SELECT ${DETAIL} FROM receipt_heads h
       JOIN receipt_revisions r ON r.workspace_id = h.workspace_id AND r.invocation_id = h.invocation_id
        AND r.receipt_revision = COALESCE($3::int, h.receipt_revision)
       WHERE h.workspace_id = $1 AND h.invocation_id = ${INVOCATION}
       LIMIT 1`,
      [workspaceId, receiptId, revision],
    );
    return rows[0];
  }

  /** The invocation behind any of its receipt ids, provided its head belongs to the workspace. */
  async invocationOf(workspaceId: string, receiptId: string): Promise<string | null> {
    // hand-written: any revision's receipt id leads to the head (a join the entity API cannot express in one statement).
    const rows: { invocation_id: string | null }[] = await this.dataSource.query(`SELECT ${INVOCATION} AS invocation_id`, [workspaceId, receiptId]);
    return rows[0]?.invocation_id ?? null;
  }

  /** Revisions of the invocation, newest first, strictly below `beforeRevision` when given, `limit` rows at most. */
  revisions(workspaceId: string, invocationId: string, beforeRevision: number | null, limit: number): Promise<ReceiptRow[]> {
    // hand-written: the list document's snake_case projection of a partitioned table (the rows go straight to toReceiptProjection).
    return this.dataSource.query(
      `SELECT ${PROJECTION} FROM receipt_revisions
       WHERE workspace_id = $1 AND invocation_id = $2 AND ($3::int IS NULL OR receipt_revision < $3)
       ORDER BY receipt_revision DESC, occurred_at DESC LIMIT $4`,
      [workspaceId, invocationId, beforeRevision, limit],
    );
  }
}
