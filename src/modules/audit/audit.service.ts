import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { OperatorContext } from 'src/common/access/context';
import { newId } from 'src/common/ids/ids';
import { assertConforms } from 'src/common/http/document-schema';
import { queryError } from 'src/common/http/errors';
import { CursorValue, decodeCursor, encodeCursor } from 'src/common/pagination/cursor';
import { formatTimeRequired, TimeWindow } from 'src/common/time/time';
import { Tx } from 'src/database/transaction';
import { ChainedRow, formatChainTime, GENESIS_HASH, linkHash } from 'src/modules/audit/audit-chain';
import { AUDIT_ACTIONS, AUDIT_LIST_SCHEMA, AuditAction, MAX_AUDIT_EMAIL, MAX_AUDIT_TARGET, sanitizeAuditDetail, STORED_ONLY_DETAIL_KEYS } from 'src/modules/audit/audit-vocabulary';

export interface AuditEntry {
  workspaceId: string;
  actor: OperatorContext | null;
  action: AuditAction;
  target: string | null;
  detail?: Record<string, unknown>;
}

interface AuditRow {
  id: string;
  workspace_id: string;
  actor_user_id: string | null;
  actor_email: string | null;
  action: string;
  target: string | null;
  detail: Record<string, unknown>;
  occurred_at: Date;
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

/** The audit trail: written in the transaction of the act it records, read newest first. */
@Injectable()
export class AuditService {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * Writes the audit row inside the caller's transaction, with the detail sanitized, as the next
   * link of the workspace's chain. The upsert locks the workspace's chain head until the act
   * commits or rolls back, so seqs follow commit order without gap or duplicate and a rolled-back
   * act leaves no link. The only writer of `audit_events`.
   */
  async record(tx: Tx, entry: AuditEntry): Promise<void> {
    const [head]: { seq: string; chain_hash: string; now: Date }[] = await tx.manager.query(
      `INSERT INTO audit_chain_heads (workspace_id, seq, chain_hash) VALUES ($1, 0, $2)
       ON CONFLICT (workspace_id) DO UPDATE SET seq = audit_chain_heads.seq
       RETURNING seq, chain_hash, date_trunc('milliseconds', clock_timestamp()) AS now`,
      [entry.workspaceId, GENESIS_HASH],
    );
    const email = entry.actor?.email ?? null;
    const row: ChainedRow = {
      workspace_id: entry.workspaceId,
      seq: Number(head.seq) + 1,
      event_id: newId('aud'),
      actor: { user_id: entry.actor?.userId ?? null, email: email !== null && email.length <= MAX_AUDIT_EMAIL ? email : null },
      action: entry.action,
      target: entry.target !== null && entry.target.length <= MAX_AUDIT_TARGET ? entry.target : null,
      detail: sanitizeAuditDetail(entry.detail),
      occurred_at: formatChainTime(head.now),
    };
    const chainHash = linkHash(head.chain_hash, row);
    await tx.manager.query(
      `WITH head AS (UPDATE audit_chain_heads SET seq = $8, chain_hash = $9 WHERE workspace_id = $2)
       INSERT INTO audit_events (id, workspace_id, actor_user_id, actor_email, action, target, detail, occurred_at, seq, chain_hash)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $10, $8, $9)`,
      [row.event_id, row.workspace_id, row.actor.user_id, row.actor.email, row.action, row.target, JSON.stringify(row.detail), row.seq, chainHash, head.now],
    );
  }

  async list(workspaceId: string, query: AuditQuery) {
    if (query.action !== undefined && !(AUDIT_ACTIONS as readonly string[]).includes(query.action)) {
      throw queryError('action', 'unknown audit action');
    }
    let after: CursorValue<typeof CURSOR> | null = null;
    if (query.cursor !== undefined) {
      after = decodeCursor(CURSOR, query.cursor);
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
      next_cursor: rows.length > query.limit && last ? encodeCursor(CURSOR, { at: formatTimeRequired(last.occurred_at), id: last.id }) : null,
    });
  }
}
