import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager, IsNull, LessThan, Not } from 'typeorm';
import { Correlation, EVIDENCE_COLUMNS, EvidenceRow } from 'src/modules/webhooks/dto/evidence.document';
import { WebhookEvidence } from 'src/modules/webhooks/entities/webhook-evidence.entity';

/** `webhook_evidence`: the recorded events, their correlation and their evaluation hand-off. */
@Injectable()
export class WebhookEvidenceRepository {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * Records the event, due for its evaluation hand-off after `retryMs` on the database clock; returns
   * the row, or undefined when an event with this `evidence_id` is already recorded (nothing written).
   */
  // hand-written: ON CONFLICT (evidence_id) DO NOTHING RETURNING, with a deadline on the database clock
  async insertIfAbsent(manager: EntityManager, event: EvidenceRow, retryMs: number): Promise<EvidenceRow | undefined> {
    const [inserted]: EvidenceRow[] = await manager.query(
      `INSERT INTO webhook_evidence (evidence_id, workspace_id, connection_id, subscription_id, event_type, provider_event_id, upstream_id,
         idempotency_key, trust, signature_profile, key_version, body_digest, batch_position, results, received_at, content_digest,
         correlation, receipt_id, stage, evaluation_pending, evaluate_after)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, true, clock_timestamp() + $20 * interval '1 millisecond')
       ON CONFLICT (evidence_id) DO NOTHING
       RETURNING ${EVIDENCE_COLUMNS}`,
      [
        event.evidence_id, event.workspace_id, event.connection_id, event.subscription_id, event.event_type, event.provider_event_id, event.upstream_id,
        event.idempotency_key, event.trust, event.signature_profile, event.key_version, event.body_digest, event.batch_position,
        JSON.stringify(event.results), event.received_at, event.content_digest, event.correlation, event.receipt_id, event.stage, retryMs,
      ],
    );
    return inserted;
  }

  /** The recorded event; undefined when there is none. */
  async find(manager: EntityManager, evidenceId: string): Promise<EvidenceRow | undefined> {
    const row = await manager.findOneBy(WebhookEvidence, { evidenceId });
    return row ? toEvidenceRow(row) : undefined;
  }

  /** The workspace and receipt of an evidence event whose evaluation hand-off is pending; null when it is not (or there is none). */
  pendingEvaluation(evidenceId: string): Promise<Pick<WebhookEvidence, 'workspaceId' | 'receiptId'> | null> {
    return this.dataSource.manager.findOne(WebhookEvidence, { select: { workspaceId: true, receiptId: true }, where: { evidenceId, evaluationPending: true } });
  }

  /** Marks the hand-off done, unless the correlation moved to another receipt meanwhile. */
  async markEvaluated(evidenceId: string, receiptId: string | null): Promise<void> {
    await this.dataSource.manager.update(WebhookEvidence, { evidenceId, receiptId: receiptId === null ? IsNull() : receiptId }, { evaluationPending: false });
  }

  /** Claims up to `limit` pending hand-offs due at `now`, pushing each back `retryMs`; returns their ids. */
  // hand-written: FOR UPDATE SKIP LOCKED claim, so replicas never claim the same rows
  async claimDue(now: Date, limit: number, retryMs: number): Promise<string[]> {
    const [claimed]: [{ evidence_id: string }[], number] = await this.dataSource.query(
      `UPDATE webhook_evidence SET evaluate_after = $2::timestamptz + $3 * interval '1 millisecond'
       WHERE evidence_id IN (
         SELECT evidence_id FROM webhook_evidence WHERE evaluation_pending AND evaluate_after <= $2
         ORDER BY evaluate_after, evidence_id LIMIT $1 FOR UPDATE SKIP LOCKED)
       RETURNING evidence_id`,
      [limit, now, retryMs],
    );
    return claimed.map((row) => row.evidence_id);
  }

  /** A page of evidence not matched to a receipt, oldest first after (`receivedAt`, `evidenceId`). */
  // hand-written: keyset page over (received_at, evidence_id) with a row comparison
  unmatchedAfter(receivedAt: Date, evidenceId: string, limit: number): Promise<EvidenceRow[]> {
    return this.dataSource.query(
      `SELECT ${EVIDENCE_COLUMNS} FROM webhook_evidence
       WHERE correlation <> 'matched' AND (received_at, evidence_id) > ($1, $2)
       ORDER BY received_at, evidence_id LIMIT $3`,
      [receivedAt, evidenceId, limit],
    );
  }

  /**
   * Records a new correlation for evidence still unmatched (a matched one becomes pending its hand-off,
   * due after `retryMs` on the database clock); false when it was no longer unmatched.
   */
  async correlateUnmatched(
    evidenceId: string,
    match: { correlation: Correlation; receipt_id: string | null; stage: string | null },
    retryMs: number,
  ): Promise<boolean> {
    const { affected } = await this.dataSource.manager.update(
      WebhookEvidence,
      { evidenceId, correlation: 'unmatched' },
      {
        correlation: match.correlation,
        receiptId: match.receipt_id,
        stage: match.stage,
        evaluationPending: match.correlation === 'matched',
        evaluateAfter: () => `clock_timestamp() + ${Math.trunc(retryMs)} * interval '1 millisecond'`,
      },
    );
    return affected === 1;
  }

  /** Deletes unmatched and ambiguous evidence received before `before`; returns how many. */
  async expireUnmatched(before: Date): Promise<number> {
    const { affected } = await this.dataSource.manager.delete(WebhookEvidence, { correlation: Not('matched'), receivedAt: LessThan(before) });
    return affected ?? 0;
  }
}

function toEvidenceRow(row: WebhookEvidence): EvidenceRow {
  return {
    evidence_id: row.evidenceId,
    workspace_id: row.workspaceId,
    connection_id: row.connectionId,
    subscription_id: row.subscriptionId,
    event_type: row.eventType,
    provider_event_id: row.providerEventId,
    upstream_id: row.upstreamId,
    idempotency_key: row.idempotencyKey,
    trust: row.trust,
    signature_profile: row.signatureProfile,
    key_version: row.keyVersion,
    body_digest: row.bodyDigest,
    batch_position: row.batchPosition,
    results: row.results,
    received_at: row.receivedAt,
    content_digest: row.contentDigest,
    correlation: row.correlation,
    receipt_id: row.receiptId,
    stage: row.stage,
  };
}
