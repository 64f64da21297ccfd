import { Injectable, OnModuleInit } from '@nestjs/common';
import { ApiError, queryError } from 'src/common/http/errors';
import { formatTime, requestWindow } from 'src/common/time/time';
import { decodeReceiptCursor, decodeTimeBound, encodeReceiptCursor, ReceiptPosition } from 'src/modules/receipts/receipt-cursor';
import { DECISIONS, EVIDENCE_TRUST, INVOCATION_STATES, VERIFICATION_STATES } from 'src/modules/receipts/receipt-values';
import { ReceiptsProjector } from 'src/modules/receipts/receipts.projector';
import { HeadsPage, ReceiptsRepository } from 'src/modules/receipts/receipts.repository';
import { toReceiptDetail, toReceiptProjection } from 'src/modules/receipts/dto/receipt.document';
import { ReceiptsQueryDto, RevisionsQueryDto } from 'src/modules/receipts/dto/receipts-query.dto';
import { StreamsService } from 'src/modules/streams/streams.service';
import { OverviewRegistry } from 'src/modules/workspaces/overview.registry';

export const RECEIPT_NOT_FOUND = 'receipt not found';

function checkVocabulary(value: string | undefined, allowed: readonly string[], fail: () => Error): void {
  if (value !== undefined && !allowed.includes(value)) throw fail();
}

@Injectable()
export class ReceiptsService implements OnModuleInit {
  constructor(
    private readonly receipts: ReceiptsRepository,
    private readonly projector: ReceiptsProjector,
    private readonly streams: StreamsService,
    private readonly overviews: OverviewRegistry,
  ) {}

  onModuleInit(): void {
    this.streams.register(this.projector);
    this.overviews.register('receipts', async (workspaceId) => {
      const counter = await this.receipts.counter(workspaceId);
      return { total: counter ? Number(counter.total) : 0, last_at: formatTime(counter?.lastAt) };
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

    const page: HeadsPage = { where: [], values: [], limit: q.limit + 1 };
    const add = (clause: (n: number) => string, ...params: unknown[]) => {
      page.values.push(...params);
      page.where.push(clause(page.values.length - params.length + 2));
    };
    // State and decision are checked against their closed vocabularies above and written into the
    // statement: the partial filter indexes serve only values the plan itself can tell apart from
    // the common one, which a generic plan of `state = $n` cannot.
    for (const column of ['state', 'decision'] as const) if (q[column] !== undefined) page.where.push(`${column} = '${q[column]}'`);
    for (const column of ['evidence_trust', 'verification_state', 'tool', 'key_id', 'connection_id'] as const) {
      if (q[column] !== undefined) add((n) => `${column} = $${n}`, q[column]);
    }
    if (window) add((n) => `occurred_at >= $${n} AND occurred_at < $${n + 1}`, window.from, window.to);
    if (position?.kind === 'keyset') add((n) => `(occurred_at, receipt_id) < ($${n}, $${n + 1})`, position.at, position.id);
    if (position?.kind === 'time') add((n) => `occurred_at < $${n}`, position.before);
    const rows = await this.receipts.heads(workspaceId, page);
    const shown = rows.slice(0, q.limit);
    const last = shown[shown.length - 1];
    const next = rows.length > q.limit && last ? encodeReceiptCursor(workspaceId, last.occurred_at, last.receipt_id) : null;
    return { receipts: shown.map(toReceiptProjection), next_cursor: next, next_before: next };
  }

  /** The newest revision of the invocation behind any of its receipt ids, or the one `revision` names. */
  async get(workspaceId: string, receiptId: string, revision: number | undefined) {
    const row = await this.receipts.detail(workspaceId, receiptId, revision ?? null);
    if (!row) throw new ApiError(404, RECEIPT_NOT_FOUND);
    return toReceiptDetail(row);
  }

  /** Every stored revision of the invocation, newest first, strictly below `before_revision`. */
  async revisions(workspaceId: string, receiptId: string, q: RevisionsQueryDto) {
    const invocationId = await this.receipts.invocationOf(workspaceId, receiptId);
    if (!invocationId) throw new ApiError(404, RECEIPT_NOT_FOUND);
    const rows = await this.receipts.revisions(workspaceId, invocationId, q.before_revision ?? null, q.limit + 1);
    const page = rows.slice(0, q.limit);
    return {
      revisions: page.map(toReceiptProjection),
      next_before_revision: rows.length > q.limit ? page[page.length - 1].receipt_revision : null,
    };
  }
}
