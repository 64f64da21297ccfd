import { Injectable } from '@nestjs/common';
import { OperatorContext } from 'src/platform/access/context';
import { newId } from 'src/common/ids/ids';
import { assertConforms } from 'src/common/http/document-schema';
import { queryError } from 'src/common/http/errors';
import { isStorableText } from 'src/common/http/text';
import { CursorValue, decodeCursor, encodeCursor } from 'src/common/pagination/cursor';
import { formatTimeRequired, TimeWindow } from 'src/common/time/time';
import { Tx } from 'src/database/transaction';
import { canonicalParts, GENESIS_HASH } from 'src/common/crypto/audit-chain';
import { AuditEventsRepository, AuditRow } from 'src/modules/audit/audit-events.repository';
import { CarriedCtes, NamedStatement } from 'src/database/named-query';
import { AUDIT_ACTIONS, AUDIT_LIST_SCHEMA, AuditAction, MAX_AUDIT_EMAIL, MAX_AUDIT_TARGET, sanitizeAuditDetail, STORED_ONLY_DETAIL_KEYS } from 'src/modules/audit/audit-vocabulary';

export interface AuditEntry {
  workspaceId: string;
  actor: OperatorContext | null;
  action: AuditAction;
  target: string | null;
  detail?: Record<string, unknown>;
}

export interface AuditQuery {
  window: TimeWindow;
  action?: string;
  userId?: string;
  target?: string;
  limit: number;
  cursor?: string;
}

const CURSOR = { at: 'timestamp', id: 'string' } as const;

/** An audit event as `toAuditEvent` shows it but for `occurred_at`, which comes last. */
function auditEventDraft(row: Omit<AuditRow, 'occurred_at'>) {
  return {
    schema_version: 1,
    event_id: row.id,
    workspace_id: row.workspace_id,
    actor: { user_id: row.actor_user_id, email: row.actor_email },
    action: row.action,
    target: row.target,
    // The keys stored beyond the specification's allow-list are dropped here only; any other
    // unexpected key is left for the schema check to refuse (a corrupted row, never shown).
    detail: Object.fromEntries(Object.entries(row.detail).filter(([key]) => !STORED_ONLY_DETAIL_KEYS.has(key))),
  };
}

export function toAuditEvent(row: AuditRow) {
  return { ...auditEventDraft(row), occurred_at: formatTimeRequired(row.occurred_at) };
}

/** An audit event as `toAuditEvent` shows it, before the database decides its `occurred_at`. */
export type AuditEventDraft = ReturnType<typeof auditEventDraft>;

/**
 * A write carried by the audit append statement, in the transaction of the act it records: the
 * notifications outbox's `audit.event`, registered at module init (inverted so audit imports
 * nobody). `statement` gives CTEs that follow the appended row `ev` (`id`, `workspace_id`,
 * `occurred_at`), their values numbered from `$first`, and the columns they add to the answer.
 */
export interface AuditCarried {
  statement(first: number): CarriedCtes;
  /** This row's values for them, and what follows the statement's answer; null: nothing rides on this row. */
  bind(tx: Tx, event: AuditEventDraft): { values: unknown[]; written(answer: Record<string, unknown>): void } | null;
}

/** The audit trail: written in the transaction of the act it records, read newest first. */
@Injectable()
export class AuditService {
  private carried?: { write: AuditCarried; statement: NamedStatement };

  constructor(private readonly events: AuditEventsRepository) {}

  /** Registered once at module init by the module whose write rides on every audit row. */
  carry(write: AuditCarried): void {
    this.carried = { write, statement: this.events.carrying((first) => write.statement(first)) };
  }

  /**
   * Writes the audit row inside the caller's transaction, with the detail sanitized, as the next
   * link of the workspace's chain, in one statement: the upsert of the workspace's chain head
   * locks it until the act commits or rolls back (seqs follow commit order without gap or
   * duplicate; a rolled-back act leaves no link) and computes the link there, SHA-256 over the
   * previous link and the row's canonical JSON, whose `occurred_at` and `seq` only the database
   * knows (docs/audit.md). The same statement carries the registered write (`carry`). The only
   * writer of `audit_events`.
   */
  async record(tx: Tx, entry: AuditEntry): Promise<void> {
    // Text too long, or that would not hash losslessly (checked at the edge and at sign-in already), is kept as null.
    const keep = (text: string | null | undefined, max: number) => (typeof text === 'string' && text.length <= max && isStorableText(text) ? text : null);
    const row = {
      workspace_id: entry.workspaceId,
      event_id: newId('aud'),
      actor: { user_id: entry.actor?.userId ?? null, email: keep(entry.actor?.email, MAX_AUDIT_EMAIL) },
      action: entry.action,
      target: keep(entry.target, MAX_AUDIT_TARGET),
      detail: sanitizeAuditDetail(entry.detail),
    };
    const parts = canonicalParts(row);
    const draft = auditEventDraft({ id: row.event_id, workspace_id: row.workspace_id, actor_user_id: row.actor.user_id, actor_email: row.actor.email, action: row.action, target: row.target, detail: row.detail });
    const carried = this.carried;
    const riding = carried?.write.bind(tx, draft);
    const answer = await this.events.append(
      tx.manager,
      {
        id: row.event_id,
        workspaceId: row.workspace_id,
        actorUserId: row.actor.user_id,
        actorEmail: row.actor.email,
        action: row.action,
        target: row.target,
        detailJson: JSON.stringify(row.detail),
        genesisHash: GENESIS_HASH,
        before: parts.before,
        between: parts.between,
        after: parts.after,
      },
      carried && riding ? { statement: carried.statement, values: riding.values } : undefined,
    );
    riding?.written(answer);
  }

  async list(workspaceId: string, query: AuditQuery) {
    if (query.action !== undefined && !(AUDIT_ACTIONS as readonly string[]).includes(query.action)) {
      throw queryError('action', 'unknown audit action');
    }
    let after: CursorValue<typeof CURSOR> | null = null;
    if (query.cursor !== undefined) {
      after = decodeCursor(CURSOR, `audit:${workspaceId}`, query.cursor);
      if (!after) throw queryError('cursor', 'invalid cursor');
    }
    const rows = await this.events.page({
      workspaceId,
      from: query.window.from,
      to: query.window.to,
      actions: AUDIT_ACTIONS,
      action: query.action,
      userId: query.userId,
      target: query.target,
      after: after ? { at: new Date(after.at), id: after.id } : undefined,
      limit: query.limit + 1,
    });
    const page = rows.slice(0, query.limit);
    const last = page[page.length - 1];
    return assertConforms(AUDIT_LIST_SCHEMA, {
      schema_version: 1,
      workspace_id: workspaceId,
      window: { from: formatTimeRequired(query.window.from), to: formatTimeRequired(query.window.to) },
      events: page.map(toAuditEvent),
      next_cursor: rows.length > query.limit && last ? encodeCursor(CURSOR, `audit:${workspaceId}`, { at: formatTimeRequired(last.occurred_at), id: last.id }) : null,
    });
  }
}
