import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { allowLongerStatements } from 'src/database/bounded-driver';
import { ReceiptPosition } from 'src/modules/receipts/receipt-cursor';

/**
 * The newest revision of `outer`'s invocation that carries an authorization request (null when none
 * does): a backward primary-key probe per row, whatever the planner's statistics. Written as a
 * NOT EXISTS, the anti-join was planned on statistics older than a burst of ingestion as a rescan
 * of the workspace's requests for every row (8.3 s for 5,500 receipts recorded at once, 44 ms now).
 */
const newestRequestOf = (outer: string) =>
  `(SELECT n.receipt_revision FROM receipt_revisions n WHERE n.workspace_id = ${outer}.workspace_id AND n.invocation_id = ${outer}.invocation_id
    AND n.envelope ? 'authorization' ORDER BY n.receipt_revision DESC LIMIT 1)`;

/**
 * A page of each invocation's newest revision carrying an authorization request in the window,
 * newest first, before the position ($3, $4) (the window's end and '' for the first page; the last
 * row of the page before for the next). The partial index `receipt_revisions_authorization_idx`
 * walks only those rows.
 */
const RECORDED_DECISIONS = `
  SELECT r.receipt_id, r.key_id, r.tool, r.occurred_at, r.envelope->'authorization' AS authorization
  FROM receipt_revisions r
  WHERE r.workspace_id = $1 AND r.occurred_at >= $2 AND r.occurred_at <= $3 AND (r.occurred_at < $3 OR r.receipt_id < $4) AND r.envelope ? 'authorization'
    AND r.receipt_revision = ${newestRequestOf('r')}
  ORDER BY r.occurred_at DESC, r.receipt_id DESC
  LIMIT $5`;

/**
 * Of the newest $4 receipts (invocations) in `[from, to)`, those none of whose revisions carries an
 * authorization request: at most $4 (the replay's `limit`) heads are probed, walked newest first on
 * `receipt_heads_list_idx`, however wide the window (a `from` in the year 0001 included).
 */
const WITHOUT_REQUEST = `
  SELECT count(*)::int AS n FROM (
    SELECT h.workspace_id, h.invocation_id FROM receipt_heads h
    WHERE h.workspace_id = $1 AND h.occurred_at >= $2 AND h.occurred_at < $3
    ORDER BY h.occurred_at DESC, h.receipt_id DESC LIMIT $4
  ) h WHERE ${newestRequestOf('h')} IS NULL`;

/**
 * Receipts awaiting a webhook evidence event: same workspace and connection, the same safe upstream
 * id, a staged plan still pending, whose recorded envelope expects this subscription and event type
 * at a named stage (`verification.expected_evidence`); a reflected idempotency key narrows the set
 * to receipts recorded with that key. Two rows are enough to know the match is ambiguous.
 */
const AWAITING_EVIDENCE = `
  SELECT h.receipt_id, x.stage
  FROM receipt_heads h
  JOIN receipt_revisions r ON r.workspace_id = h.workspace_id AND r.invocation_id = h.invocation_id
    AND r.receipt_revision = h.receipt_revision AND r.occurred_at = h.occurred_at
  CROSS JOIN LATERAL (
    SELECT e->>'stage' AS stage
    FROM jsonb_array_elements(CASE WHEN jsonb_typeof(r.envelope #> '{verification,expected_evidence}') = 'array'
                                   THEN r.envelope #> '{verification,expected_evidence}' ELSE '[]'::jsonb END) AS e
    WHERE e->>'subscription_id' = $4 AND e->>'event_type' = $5 AND jsonb_typeof(e->'stage') = 'string'
    LIMIT 1
  ) x
  WHERE h.workspace_id = $1 AND h.connection_id = $2 AND h.upstream_id = $3
    AND h.verification_method = 'staged_plan' AND h.verification_state = 'pending'
    AND ($6::text IS NULL OR r.idempotency_key = $6)
  ORDER BY h.receipt_id
  LIMIT 2`;

/** A recorded decision: the receipt, its key and tool, and `envelope.authorization` as recorded (its shape unchecked). */
export interface RecordedDecisionRow {
  receipt_id: string;
  key_id: string | null;
  tool: string | null;
  occurred_at: Date;
  authorization: unknown;
}

/** A receipt head carrying a route, with its recorded envelope's `route` object. */
export interface RouteDecisionRow {
  receipt_id: string;
  occurred_at: Date;
  state: string;
  decision: string;
  evidence_trust: string;
  route: Record<string, unknown>;
}

/** What a webhook evidence event is matched on. */
export interface EvidenceKey {
  workspace_id: string;
  connection_id: string;
  upstream_id: string;
  subscription_id: string;
  event_type: string;
  idempotency_key: string | null;
}

/**
 * The reads receipts offers other modules (policy replay and explain, routing's route decisions,
 * webhook evidence correlation), one method per need: they read `receipt_heads` and
 * `receipt_revisions`, which only receipts may name.
 */
@Injectable()
export class ReceiptReadsRepository {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * A page of recorded decisions (policy replay), newest first before (`at`, `id`), read in `manager`'s
   * transaction with its statement bound raised to `timeoutMs`.
   */
  // hand-written: keyset page over (occurred_at, receipt_id) on the partial index receipt_revisions_authorization_idx,
  // with a per-row primary-key probe for the newest request (bench/policy-replay.ts, docs/decisions.md)
  async recordedDecisions(
    manager: EntityManager,
    page: { workspaceId: string; from: Date; at: Date; id: string; limit: number },
    timeoutMs: number,
  ): Promise<RecordedDecisionRow[]> {
    await allowLongerStatements(manager.queryRunner!, timeoutMs, 'transaction');
    return manager.query(RECORDED_DECISIONS, [page.workspaceId, page.from, page.at, page.id, page.limit]);
  }

  /** Of the newest `limit` receipts in `[from, to)`, how many carry no authorization request on any revision (policy replay). */
  // hand-written: a bounded walk of receipt_heads_list_idx with a per-row probe of receipt_revisions (bench/policy-replay.ts)
  async countWithoutRequest(workspaceId: string, from: Date, to: Date, limit: number): Promise<number> {
    const [{ n }]: { n: number }[] = await this.dataSource.query(WITHOUT_REQUEST, [workspaceId, from, to, limit]);
    return n;
  }

  /**
   * `envelope.authorization` of a receipt of the workspace (any of its revisions, by receipt id; policy explain):
   * undefined when no such receipt, null when the revision read carries none.
   */
  // hand-written: projects one jsonb path instead of reading whole envelopes
  async authorizationOf(workspaceId: string, receiptId: string): Promise<{ authorization: unknown } | undefined> {
    const rows: { authorization: unknown }[] = await this.dataSource.query(
      `SELECT envelope->'authorization' AS authorization FROM receipt_revisions WHERE workspace_id = $1 AND receipt_id = $2 LIMIT 1`,
      [workspaceId, receiptId],
    );
    return rows[0];
  }

  /**
   * Receipts carrying a route (an object `route` in the recorded envelope), newest first: at most `limit`
   * rows before `before`, for `capability` only when given (routing's route decisions).
   */
  // hand-written: keyset page over (occurred_at, receipt_id) joining each head to its revision, filtered on the envelope's jsonb route
  routeDecisions(workspaceId: string, filter: { capability?: string; before?: ReceiptPosition; limit: number }): Promise<RouteDecisionRow[]> {
    const values: unknown[] = [workspaceId];
    const where = [`h.workspace_id = $1`, `jsonb_typeof(r.envelope->'route') = 'object'`];
    if (filter.capability !== undefined) {
      values.push(filter.capability);
      where.push(`r.envelope->'route'->>'capability' = $${values.length}`);
    }
    if (filter.before?.kind === 'keyset') {
      values.push(filter.before.at, filter.before.id);
      where.push(`(h.occurred_at, h.receipt_id) < ($${values.length - 1}, $${values.length})`);
    } else if (filter.before?.kind === 'time') {
      values.push(filter.before.before);
      where.push(`h.occurred_at < $${values.length}`);
    }
    values.push(filter.limit);
    return this.dataSource.query(
      `SELECT h.receipt_id, h.occurred_at, h.state, h.decision, h.evidence_trust, r.envelope->'route' AS route
       FROM receipt_heads h
       JOIN receipt_revisions r ON r.workspace_id = h.workspace_id AND r.invocation_id = h.invocation_id
         AND r.receipt_revision = h.receipt_revision AND r.occurred_at = h.occurred_at
       WHERE ${where.join(' AND ')}
       ORDER BY h.occurred_at DESC, h.receipt_id DESC LIMIT $${values.length}`,
      values,
    );
  }

  /**
   * Up to two receipts awaiting the evidence `key` describes, by receipt id, with the stage their envelope
   * expects it at (webhook evidence correlation; read in `manager`, the recording transaction, or outside a transaction when undefined).
   */
  // hand-written: jsonb_array_elements over the recorded envelope's expected evidence in a LATERAL join
  awaitingEvidence(manager: EntityManager | undefined, key: EvidenceKey): Promise<{ receipt_id: string; stage: string }[]> {
    const values = [key.workspace_id, key.connection_id, key.upstream_id, key.subscription_id, key.event_type, key.idempotency_key];
    return (manager ?? this.dataSource.manager).query(AWAITING_EVIDENCE, values);
  }
}
