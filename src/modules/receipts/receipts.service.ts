import { Injectable, OnModuleInit } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { sha256Hex } from 'src/common/crypto/crypto';
import { ApiError, queryError } from 'src/common/http/errors';
import { formatTime, requestWindow } from 'src/common/time/time';
import { namedQuery } from 'src/database/named-query';
import { decodeReceiptCursor, decodeTimeBound, encodeReceiptCursor, ReceiptPosition } from 'src/modules/receipts/receipt-cursor';
import { DECISIONS, EVIDENCE_TRUST, INVOCATION_STATES, VERIFICATION_STATES } from 'src/modules/receipts/receipt-values';
import { receiptsProjector } from 'src/modules/receipts/receipts.projector';
import {
  DETAIL_COLUMNS,
  PROJECTION_COLUMNS,
  ReceiptDetailRow,
  ReceiptRow,
  toReceiptDetail,
  toReceiptProjection,
} from 'src/modules/receipts/dto/receipt.document';
import { ReceiptsQueryDto, RevisionsQueryDto } from 'src/modules/receipts/dto/receipts-query.dto';
import { StreamsService } from 'src/modules/streams/streams.service';
import { OverviewRegistry } from 'src/modules/workspaces/overview.registry';

export const RECEIPT_NOT_FOUND = 'receipt not found';
const PROJECTION = PROJECTION_COLUMNS.join(', ');
const DETAIL = DETAIL_COLUMNS.map((c) => `r.${c}`).join(', ');
/** The invocation behind any of its receipt ids, provided its head belongs to the workspace. */
const INVOCATION = `(SELECT h.invocation_id FROM receipt_revisions x JOIN receipt_heads h ON h.invocation_id = x.invocation_id AND h.workspace_id = x.workspace_id
                     WHERE x.workspace_id = $1 AND x.receipt_id = $2 LIMIT 1)`;

function checkVocabulary(value: string | undefined, allowed: readonly string[], fail: () => Error): void {
  if (value !== undefined && !allowed.includes(value)) throw fail();
}

@Injectable()
export class ReceiptsService implements OnModuleInit {
  constructor(
    private readonly dataSource: DataSource,
    private readonly streams: StreamsService,
    private readonly overviews: OverviewRegistry,
  ) {}

  onModuleInit(): void {
    this.streams.register(receiptsProjector);
    this.overviews.register('receipts', async (workspaceId) => {
      const rows: { total: string; last_at: Date | null }[] = await this.dataSource.query(
        `SELECT total, last_at FROM receipt_counters WHERE workspace_id = $1`,
        [workspaceId],
      );
      return { total: rows[0] ? Number(rows[0].total) : 0, last_at: formatTime(rows[0]?.last_at) };
    });
  }

  /** Newest first on (occurred_at, receipt_id), one row per invocation (its newest revision). */
  async list(workspaceId: string, q: ReceiptsQueryDto) {
    checkVocabulary(q.state, INVOCATION_STATES, () => new ApiError(400, 'unknown invocation state'));
    checkVocabulary(q.evidence_trust, EVIDENCE_TRUST, () => new ApiError(400, 'unknown evidence trust class'));
    checkVocabulary(q.verification_state, VERIFICATION_STATES, () => new ApiError(400, 'unknown verification state'));
    checkVocabulary(q.decision, DECISIONS, () => queryError('decision', 'unknown authorization decision'));
    const window = requestWindow(q.from, q.to);
    let position: ReceiptPosition | null = null;
    if (q.cursor !== undefined && q.before !== undefined) throw new ApiError(400, 'invalid receipt cursor');
    if (q.cursor !== undefined || q.before !== undefined) {
      position = q.cursor !== undefined ? decodeReceiptCursor(workspaceId, q.cursor) : decodeTimeBound(q.before!);
      if (!position) throw new ApiError(400, 'invalid receipt cursor');
    }

    const values: unknown[] = [workspaceId];
    const where = ['workspace_id = $1'];
    const add = (clause: (n: number) => string, ...params: unknown[]) => {
      values.push(...params);
      where.push(clause(values.length - params.length + 1));
    };
    // State and decision are checked against their closed vocabularies above and written into the
    // statement: the partial filter indexes serve only values the plan itself can tell apart from
    // the common one, which a generic plan of `state = $n` cannot.
    for (const column of ['state', 'decision'] as const) if (q[column] !== undefined) where.push(`${column} = '${q[column]}'`);
    for (const column of ['evidence_trust', 'verification_state', 'tool', 'key_id', 'connection_id'] as const) {
      if (q[column] !== undefined) add((n) => `${column} = $${n}`, q[column]);
    }
    if (window) add((n) => `occurred_at >= $${n} AND occurred_at < $${n + 1}`, window.from, window.to);
    if (position?.kind === 'keyset') add((n) => `(occurred_at, receipt_id) < ($${n}, $${n + 1})`, position.at, position.id);
    if (position?.kind === 'time') add((n) => `occurred_at < $${n}`, position.before);
    values.push(q.limit + 1);
    // hand-written: a keyset page as a named statement (prepared once per connection; unnamed ones run at half the rate).
    const text = `SELECT ${PROJECTION} FROM receipt_heads WHERE ${where.join(' AND ')}
                  ORDER BY occurred_at DESC, receipt_id DESC LIMIT $${values.length}`;
    const rows = await namedQuery<ReceiptRow>(this.dataSource, { name: `receipts_${sha256Hex(text).slice(0, 16)}`, text }, values);
    const page = rows.slice(0, q.limit);
    const last = page[page.length - 1];
    const next = rows.length > q.limit && last ? encodeReceiptCursor(workspaceId, last.occurred_at, last.receipt_id) : null;
    return { receipts: page.map(toReceiptProjection), next_cursor: next, next_before: next };
  }

  /** The newest revision of the invocation behind any of its receipt ids, or the one `revision` names. */
  async get(workspaceId: string, receiptId: string, revision: number | undefined) {
    // hand-written: one statement finds the invocation behind any of its receipt ids and joins its revision.
    const rows: ReceiptDetailRow[] = await this.dataSource.query(
      `SELECT ${DETAIL} FROM receipt_heads h
       JOIN receipt_revisions r ON r.workspace_id = h.workspace_id AND r.invocation_id = h.invocation_id
        AND r.receipt_revision = COALESCE($3::int, h.receipt_revision)
       WHERE h.workspace_id = $1 AND h.invocation_id = ${INVOCATION}
       LIMIT 1`,
      [workspaceId, receiptId, revision ?? null],
    );
    if (!rows[0]) throw new ApiError(404, RECEIPT_NOT_FOUND);
    return toReceiptDetail(rows[0]);
  }

  /** Every stored revision of the invocation, newest first, strictly below `before_revision`. */
  async revisions(workspaceId: string, receiptId: string, q: RevisionsQueryDto) {
    const heads: { invocation_id: string }[] = await this.dataSource.query(`SELECT ${INVOCATION} AS invocation_id`, [workspaceId, receiptId]);
    const invocationId = heads[0]?.invocation_id;
    if (!invocationId) throw new ApiError(404, RECEIPT_NOT_FOUND);
    const rows: ReceiptRow[] = await this.dataSource.query(
      `SELECT ${PROJECTION} FROM receipt_revisions
       WHERE workspace_id = $1 AND invocation_id = $2 AND ($3::int IS NULL OR receipt_revision < $3)
       ORDER BY receipt_revision DESC, occurred_at DESC LIMIT $4`,
      [workspaceId, invocationId, q.before_revision ?? null, q.limit + 1],
    );
    const page = rows.slice(0, q.limit);
    return {
      revisions: page.map(toReceiptProjection),
      next_before_revision: rows.length > q.limit ? page[page.length - 1].receipt_revision : null,
    };
  }
}
