import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { OperatorContext } from 'src/platform/access/context';
import { newId } from 'src/common/ids/ids';
import { assertConforms } from 'src/common/http/document-schema';
import { queryError } from 'src/common/http/errors';
import { isStorableText } from 'src/common/http/text';
import { CursorValue, decodeCursor, encodeCursor } from 'src/common/pagination/cursor';
import { formatTimeRequired, TimeWindow } from 'src/common/time/time';
import { Tx } from 'src/database/transaction';
import { canonicalParts, GENESIS_HASH, StoredAuditRow } from 'src/common/crypto/audit-chain';
import { AUDIT_ACTIONS, AUDIT_LIST_SCHEMA, AuditAction, MAX_AUDIT_EMAIL, MAX_AUDIT_TARGET, sanitizeAuditDetail, STORED_ONLY_DETAIL_KEYS } from 'src/modules/audit/audit-vocabulary';

export interface AuditEntry {
  workspaceId: string;
  actor: OperatorContext | null;
  action: AuditAction;
  target: string | null;
  detail?: Record<string, unknown>;
}

/** A stored audit row as the listing reads it (no chain columns). */
type AuditRow = Omit<StoredAuditRow, 'seq' | 'chain_hash'>;

export interface AuditQuery {
  window: TimeWindow;
  action?: string;
  userId?: string;
  target?: string;
  limit: number;
  cursor?: string;
}

const CURSOR = { at: 'timestamp', id: 'string' } as const;

/** `occurred_at` as hashed: RFC 3339 UTC, six fractional digits (as `formatChainTime`). */
const CHAIN_TIME = `to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
const LINK = (prev: string, seq: string) => `encode(sha256(decode(${prev}, 'hex') || convert_to($9 || ${CHAIN_TIME} || $10 || (${seq})::text || $11, 'UTF8')), 'hex')`;
const RECORD = `
  WITH now AS (SELECT date_trunc('milliseconds', clock_timestamp()) AS at),
  head AS (
    INSERT INTO audit_chain_heads AS h (workspace_id, seq, chain_hash) SELECT $2, 1, ${LINK('$8', '1')} FROM now
    ON CONFLICT (workspace_id) DO UPDATE SET seq = h.seq + 1, chain_hash = (SELECT ${LINK('h.chain_hash', 'h.seq + 1')} FROM now)
    RETURNING seq, chain_hash
  )
  INSERT INTO audit_events (id, workspace_id, actor_user_id, actor_email, action, target, detail, occurred_at, seq, chain_hash)
  SELECT $1, $2, $3, $4, $5, $6, $7, now.at, head.seq, head.chain_hash FROM head, now
  RETURNING occurred_at`;

export function toAuditEvent(row: AuditRow) {
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
    occurred_at: formatTimeRequired(row.occurred_at),
  };
}

/** Told of every audit row in the transaction that writes it (the notifications outbox's `audit.event`). */
export type AuditListener = (tx: Tx, event: ReturnType<typeof toAuditEvent>) => Promise<void>;

/** The audit trail: written in the transaction of the act it records, read newest first. */
@Injectable()
export class AuditService {
  private readonly listeners: AuditListener[] = [];

  constructor(private readonly dataSource: DataSource) {}

  /** Registered once at module init by a module that reacts to audit rows (inverted so audit imports nobody). */
  onRecord(listener: AuditListener): void {
    this.listeners.push(listener);
  }

  /**
   * Writes the audit row inside the caller's transaction, with the detail sanitized, as the next
   * link of the workspace's chain, in one statement: the upsert of the workspace's chain head
   * locks it until the act commits or rolls back (seqs follow commit order without gap or
   * duplicate; a rolled-back act leaves no link) and computes the link there, SHA-256 over the
   * previous link and the row's canonical JSON, whose `occurred_at` and `seq` only the database
   * knows (docs/audit.md). The only writer of `audit_events`.
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
    const [stored]: { occurred_at: Date }[] = await tx.manager.query(RECORD, [
      row.event_id,
      row.workspace_id,
      row.actor.user_id,
      row.actor.email,
      row.action,
      row.target,
      JSON.stringify(row.detail),
      GENESIS_HASH,
      parts.before,
      parts.between,
      parts.after,
    ]);
    if (this.listeners.length === 0) return;
    const event = toAuditEvent({ id: row.event_id, workspace_id: row.workspace_id, actor_user_id: row.actor.user_id, actor_email: row.actor.email, action: row.action, target: row.target, detail: row.detail, occurred_at: stored.occurred_at });
    for (const listener of this.listeners) await listener(tx, event);
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
    const values: unknown[] = [workspaceId, query.window.from, query.window.to, AUDIT_ACTIONS];
    const where = [`workspace_id = $1`, `occurred_at >= $2`, `occurred_at < $3`, `action = ANY($4)`];
    const add = (clause: (n: number) => string, ...params: unknown[]) => {
      values.push(...params);
      where.push(clause(values.length - params.length + 1));
    };
    if (query.action !== undefined) add((n) => `action = $${n}`, query.action);
    if (query.userId !== undefined) add((n) => `actor_user_id = $${n}`, query.userId);
    if (query.target !== undefined) add((n) => `target = $${n}`, query.target);
    if (after) add((n) => `(occurred_at, id) < ($${n}, $${n + 1})`, new Date(after.at), after.id);
    values.push(query.limit + 1);
    const rows: AuditRow[] = await this.dataSource.query(
      `SELECT id, workspace_id, actor_user_id, actor_email, action, target, detail, occurred_at FROM audit_events
       WHERE ${where.join(' AND ')} ORDER BY occurred_at DESC, id DESC LIMIT $${values.length}`,
      values,
    );
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
