import { Injectable, Logger } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { canonicalJson, sha256Hex } from 'src/common/crypto/crypto';
import { ApiError, bodyError, FieldValidationError } from 'src/common/http/errors';
import { parseRfc3339 } from 'src/common/time/time';
import { inTransaction } from 'src/database/transaction';
import { ConnectionsService } from 'src/modules/connections/connections.service';
import { GatewayClient } from 'src/modules/gateway/gateway.client';
import { Correlation, EVIDENCE_COLUMNS, EvidenceRow, toEvidenceDocument } from 'src/modules/webhooks/dto/evidence.document';
import { WebhookEvidenceDto } from 'src/modules/webhooks/dto/evidence.dto';
import { signatureProfile } from 'src/modules/webhooks/signatures/signature-profiles';
import { WorkspacesService } from 'src/modules/workspaces/workspaces.service';
import { errorFields } from 'src/common/logging/error-fields';

const DAY_MS = 24 * 3600 * 1000;
/** Unmatched evidence is kept through the plan deadline (one day) and late authoritative reconciliation (one more day). */
export const UNMATCHED_RETENTION_MS = 2 * DAY_MS;
/** A claimed or freshly recorded evaluation is retried by the job no sooner than this. */
export const EVALUATION_RETRY_MS = 60_000;
const PAGE = 100;

/** Trust ranks (core spec section 2), lowest first: a result never claims more than its event. */
const TRUST_RANK: readonly string[] = ['untrusted', 'broker_attested', 'connector_attested', 'vendor_signed', 'gateway_observed'];

interface Match {
  correlation: Correlation;
  receipt_id: string | null;
  stage: string | null;
}

/**
 * Receipts awaiting this evidence: same workspace and connection, the same safe upstream id, a
 * staged plan still pending, whose recorded envelope expects this subscription and event type
 * at a named stage (`verification.expected_evidence`); a reflected idempotency key narrows the
 * set to receipts recorded with that key. Two rows are enough to know the match is ambiguous.
 */
const CANDIDATES = `
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

/**
 * Webhook evidence: persists the gateway's verified evidence event (idempotent on `evidence_id`),
 * correlates it with at most one receipt, and hands the reference to the gateway's evaluation
 * endpoint. Nothing here writes a receipt: the gateway stays the receipt authority.
 */
@Injectable()
export class WebhookEvidenceService {
  private readonly logger = new Logger('webhooks');

  constructor(
    private readonly dataSource: DataSource,
    private readonly gateway: GatewayClient,
    private readonly workspaces: WorkspacesService,
    private readonly connections: ConnectionsService,
  ) {}

  /** Records the event; `created` is false for a repeat of an identical event. */
  async record(workspaceId: string, body: WebhookEvidenceDto): Promise<{ created: boolean; evidence: ReturnType<typeof toEvidenceDocument> }> {
    const receivedAt = this.check(workspaceId, body);
    const event = {
      evidence_id: body.evidence_id,
      workspace_id: body.workspace_id,
      connection_id: body.connection_id,
      subscription_id: body.subscription_id,
      event_type: body.event_type,
      provider_event_id: body.provider_event_id,
      upstream_id: body.upstream_id ?? null,
      idempotency_key: body.idempotency_key ?? null,
      trust: body.trust,
      signature_profile: body.signature_profile,
      key_version: body.key_version,
      body_digest: body.body_digest,
      batch_position: body.batch_position ?? null,
      results: body.results.map((r) => ({ name: r.name, outcome: r.outcome, trust: r.trust })),
      received_at: receivedAt.toISOString(),
    };
    const contentDigest = sha256Hex(canonicalJson(event));

    const outcome = await inTransaction(this.dataSource, async (tx) => {
      if (!(await this.workspaces.existing([workspaceId], tx.manager)).has(workspaceId)) throw new ApiError(404, 'workspace not found');
      if (!(await this.connections.holds(tx.manager, workspaceId, event.connection_id))) throw new ApiError(404, 'connection not found');

      const match = await this.correlate(tx.manager, event);
      const [inserted]: EvidenceRow[] = await tx.manager.query(
        `INSERT INTO webhook_evidence (evidence_id, workspace_id, connection_id, subscription_id, event_type, provider_event_id, upstream_id,
           idempotency_key, trust, signature_profile, key_version, body_digest, batch_position, results, received_at, content_digest,
           correlation, receipt_id, stage, evaluation_pending, evaluate_after)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, true, clock_timestamp() + $20 * interval '1 millisecond')
         ON CONFLICT (evidence_id) DO NOTHING
         RETURNING ${EVIDENCE_COLUMNS}`,
        [
          event.evidence_id, workspaceId, event.connection_id, event.subscription_id, event.event_type, event.provider_event_id, event.upstream_id,
          event.idempotency_key, event.trust, event.signature_profile, event.key_version, event.body_digest, event.batch_position,
          JSON.stringify(event.results), receivedAt, contentDigest, match.correlation, match.receipt_id, match.stage, EVALUATION_RETRY_MS,
        ],
      );
      if (inserted) {
        tx.afterCommit(() => this.evaluate(inserted.evidence_id));
        return { created: true, row: inserted };
      }
      const [existing]: EvidenceRow[] = await tx.manager.query(`SELECT ${EVIDENCE_COLUMNS} FROM webhook_evidence WHERE evidence_id = $1`, [event.evidence_id]);
      if (existing.content_digest !== contentDigest) throw new ApiError(409, 'evidence_id already recorded with different content');
      return { created: false, row: existing };
    });
    return { created: outcome.created, evidence: toEvidenceDocument(outcome.row) };
  }

  /**
   * Sends the evidence reference to the gateway's evaluation endpoint; on success the hand-off is
   * done unless the correlation changed meanwhile. A failure leaves it for the retry job.
   */
  async evaluate(evidenceId: string): Promise<boolean> {
    const [row]: { workspace_id: string; receipt_id: string | null }[] = await this.dataSource.query(
      `SELECT workspace_id, receipt_id FROM webhook_evidence WHERE evidence_id = $1 AND evaluation_pending`,
      [evidenceId],
    );
    if (!row) return false;
    try {
      await this.gateway.evaluate({ workspace_id: row.workspace_id, evidence_id: evidenceId, receipt_id: row.receipt_id });
    } catch (error) {
      this.logger.warn({ msg: 'evidence evaluation deferred', evidence_id: evidenceId, ...errorFields(error) });
      return false;
    }
    await this.dataSource.query(
      `UPDATE webhook_evidence SET evaluation_pending = false WHERE evidence_id = $1 AND receipt_id IS NOT DISTINCT FROM $2`,
      [evidenceId, row.receipt_id],
    );
    return true;
  }

  /** Retries evaluations whose hand-off failed: claims due rows (pushing them back a minute) and sends each. */
  async retryEvaluations(now = new Date()): Promise<number> {
    let sent = 0;
    for (;;) {
      const [claimed]: [{ evidence_id: string }[], number] = await this.dataSource.query(
        `UPDATE webhook_evidence SET evaluate_after = $2::timestamptz + $3 * interval '1 millisecond'
         WHERE evidence_id IN (
           SELECT evidence_id FROM webhook_evidence WHERE evaluation_pending AND evaluate_after <= $2
           ORDER BY evaluate_after, evidence_id LIMIT $1 FOR UPDATE SKIP LOCKED)
         RETURNING evidence_id`,
        [PAGE, now, EVALUATION_RETRY_MS],
      );
      for (const { evidence_id } of claimed) if (await this.evaluate(evidence_id)) sent++;
      if (claimed.length < PAGE) return sent;
    }
  }

  /**
   * Correlates again the unmatched evidence still inside its retention (a receipt may have
   * arrived after its evidence); a new match is handed to the gateway with its receipt id.
   * Ambiguous evidence stays unmatched. Returns how many were matched.
   */
  async recorrelate(now = new Date()): Promise<number> {
    let matched = 0;
    let after: [Date, string] = [new Date(now.getTime() - UNMATCHED_RETENTION_MS), ''];
    for (;;) {
      const rows: EvidenceRow[] = await this.dataSource.query(
        `SELECT ${EVIDENCE_COLUMNS} FROM webhook_evidence
         WHERE correlation <> 'matched' AND (received_at, evidence_id) > ($1, $2)
         ORDER BY received_at, evidence_id LIMIT $3`,
        [after[0], after[1], PAGE],
      );
      for (const row of rows) {
        if (row.correlation !== 'unmatched' || row.upstream_id === null) continue;
        const match = await this.correlate(this.dataSource.manager, row);
        if (match.correlation === 'unmatched') continue;
        const [, count]: [unknown, number] = await this.dataSource.query(
          `UPDATE webhook_evidence SET correlation = $2, receipt_id = $3, stage = $4, evaluation_pending = $5,
             evaluate_after = clock_timestamp() + $6 * interval '1 millisecond'
           WHERE evidence_id = $1 AND correlation = 'unmatched'`,
          [row.evidence_id, match.correlation, match.receipt_id, match.stage, match.correlation === 'matched', EVALUATION_RETRY_MS],
        );
        if (count === 1 && match.correlation === 'matched') {
          matched++;
          await this.evaluate(row.evidence_id);
        }
      }
      if (rows.length < PAGE) return matched;
      const last = rows[rows.length - 1];
      after = [last.received_at, last.evidence_id];
    }
  }

  /** Deletes unmatched and ambiguous evidence received before the retention deadline; returns how many. */
  async expire(now = new Date()): Promise<number> {
    const [, count]: [unknown, number] = await this.dataSource.query(
      `DELETE FROM webhook_evidence WHERE correlation <> 'matched' AND received_at < $1`,
      [new Date(now.getTime() - UNMATCHED_RETENTION_MS)],
    );
    return count;
  }

  private async correlate(
    manager: EntityManager,
    event: Pick<EvidenceRow, 'workspace_id' | 'connection_id' | 'subscription_id' | 'event_type' | 'upstream_id' | 'idempotency_key'>,
  ): Promise<Match> {
    if (event.upstream_id === null) return { correlation: 'unmatched', receipt_id: null, stage: null };
    const rows: { receipt_id: string; stage: string }[] = await manager.query(CANDIDATES, [
      event.workspace_id, event.connection_id, event.upstream_id, event.subscription_id, event.event_type, event.idempotency_key,
    ]);
    if (rows.length === 1) return { correlation: 'matched', receipt_id: rows[0].receipt_id, stage: rows[0].stage };
    return { correlation: rows.length === 0 ? 'unmatched' : 'ambiguous', receipt_id: null, stage: null };
  }

  /** Checks the rules a DTO cannot state; returns `received_at`. */
  private check(workspaceId: string, body: WebhookEvidenceDto): Date {
    if (body.workspace_id !== workspaceId) throw bodyError(['workspace_id'], 'workspace_id must match the path');
    const profile = signatureProfile(body.signature_profile)!;
    if (body.trust !== profile.trust) throw bodyError(['trust'], 'trust must be the trust of the signature profile');
    const ceiling = TRUST_RANK.indexOf(body.trust);
    const errors = body.results
      .map((r, i) => ({ r, i }))
      .filter(({ r }) => TRUST_RANK.indexOf(r.trust) > ceiling)
      .map(({ i }) => ({ loc: ['body', 'results', i, 'trust'], msg: 'a result cannot claim more trust than its event', type: 'value_error' }));
    if (errors.length > 0) throw new FieldValidationError(errors);
    const receivedAt = parseRfc3339(body.received_at);
    if (!receivedAt) throw bodyError(['received_at'], 'received_at must be an RFC 3339 timestamp');
    return receivedAt;
  }
}
