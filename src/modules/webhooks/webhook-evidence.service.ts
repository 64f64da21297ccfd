import { Injectable, Logger } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { canonicalJson, sha256Hex } from 'src/common/crypto/crypto';
import { ApiError, bodyError, FieldValidationError } from 'src/common/http/errors';
import { parseRfc3339 } from 'src/common/time/time';
import { Transactions } from 'src/database/transactions';
import { ConnectionsService } from 'src/modules/connections/connections.service';
import { GatewayClient } from 'src/modules/gateway/gateway.client';
import { Correlation, EvidenceRow, toEvidenceDocument } from 'src/modules/webhooks/dto/evidence.document';
import { WebhookEvidenceDto } from 'src/modules/webhooks/dto/evidence.dto';
import { signatureProfile } from 'src/modules/webhooks/signatures/signature-profiles';
import { WorkspacesService } from 'src/modules/workspaces/workspaces.service';
import { ReceiptReadsRepository } from 'src/modules/receipts/receipt-reads.repository';
import { WebhookEvidenceRepository } from 'src/modules/webhooks/webhook-evidence.repository';
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
 * Webhook evidence: persists the gateway's verified evidence event (idempotent on `evidence_id`),
 * correlates it with at most one receipt, and hands the reference to the gateway's evaluation
 * endpoint. Nothing here writes a receipt: the gateway stays the receipt authority.
 */
@Injectable()
export class WebhookEvidenceService {
  private readonly logger = new Logger('webhooks');

  constructor(
    private readonly transactions: Transactions,
    private readonly evidence: WebhookEvidenceRepository,
    private readonly receipts: ReceiptReadsRepository,
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

    const outcome = await this.transactions.run(async (tx) => {
      if (!(await this.workspaces.existing([workspaceId], tx.manager)).has(workspaceId)) throw new ApiError(404, 'workspace not found');
      if (!(await this.connections.holds(tx.manager, workspaceId, event.connection_id))) throw new ApiError(404, 'connection not found');

      const match = await this.correlate(tx.manager, event);
      const inserted = await this.evidence.insertIfAbsent(
        tx.manager,
        { ...event, workspace_id: workspaceId, received_at: receivedAt, content_digest: contentDigest, ...match },
        EVALUATION_RETRY_MS,
      );
      if (inserted) {
        tx.afterCommit(() => this.evaluate(inserted.evidence_id));
        return { created: true, row: inserted };
      }
      const existing = (await this.evidence.find(tx.manager, event.evidence_id))!;
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
    const row = await this.evidence.pendingEvaluation(evidenceId);
    if (!row) return false;
    try {
      await this.gateway.evaluate({ workspace_id: row.workspaceId, evidence_id: evidenceId, receipt_id: row.receiptId });
    } catch (error) {
      this.logger.warn({ msg: 'evidence evaluation deferred', evidence_id: evidenceId, ...errorFields(error) });
      return false;
    }
    await this.evidence.markEvaluated(evidenceId, row.receiptId);
    return true;
  }

  /** Retries evaluations whose hand-off failed: claims due rows (pushing them back a minute) and sends each. */
  async retryEvaluations(now = new Date()): Promise<number> {
    let sent = 0;
    for (;;) {
      const claimed = await this.evidence.claimDue(now, PAGE, EVALUATION_RETRY_MS);
      for (const evidenceId of claimed) if (await this.evaluate(evidenceId)) sent++;
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
      const rows = await this.evidence.unmatchedAfter(after[0], after[1], PAGE);
      for (const row of rows) {
        if (row.correlation !== 'unmatched' || row.upstream_id === null) continue;
        const match = await this.correlate(undefined, row);
        if (match.correlation === 'unmatched') continue;
        const updated = await this.evidence.correlateUnmatched(row.evidence_id, match, EVALUATION_RETRY_MS);
        if (updated && match.correlation === 'matched') {
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
  expire(now = new Date()): Promise<number> {
    return this.evidence.expireUnmatched(new Date(now.getTime() - UNMATCHED_RETENTION_MS));
  }

  private async correlate(
    manager: EntityManager | undefined,
    event: Pick<EvidenceRow, 'workspace_id' | 'connection_id' | 'subscription_id' | 'event_type' | 'upstream_id' | 'idempotency_key'>,
  ): Promise<Match> {
    if (event.upstream_id === null) return { correlation: 'unmatched', receipt_id: null, stage: null };
    const rows = await this.receipts.awaitingEvidence(manager, { ...event, upstream_id: event.upstream_id });
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
