import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { OperatorContext } from 'src/common/access/context';
import { newId } from 'src/common/ids/ids';
import { assertConforms } from 'src/common/http/document-schema';
import { queryError } from 'src/common/http/errors';
import { CursorValue, decodeCursor, encodeCursor } from 'src/common/pagination/cursor';
import { formatTimeRequired, TimeWindow } from 'src/common/time/time';
import { Tx } from 'src/database/transaction';
import { AUDIT_ACTIONS, AUDIT_LIST_SCHEMA, AuditAction, MAX_AUDIT_EMAIL, MAX_AUDIT_TARGET, sanitizeAuditDetail } from 'src/modules/audit/audit-vocabulary';

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
    detail: row.detail,
    occurred_at: formatTimeRequired(row.occurred_at),
  };
}

/** The audit trail: written in the transaction of the act it records, read newest first. */
@Injectable()
export class AuditService {
  constructor(private readonly dataSource: DataSource) {}

  /** Writes the audit row inside the caller's transaction, with the detail sanitized. */
  async record(tx: Tx, entry: AuditEntry): Promise<void> {
    const email = entry.actor?.email ?? null;
    await tx.manager.query(
      `INSERT INTO audit_events (id, workspace_id, actor_user_id, actor_email, action, target, detail) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [
        newId('aud'),
        entry.workspaceId,
        entry.actor?.userId ?? null,
        email !== null && email.length <= MAX_AUDIT_EMAIL ? email : null,
        entry.action,
        entry.target !== null && entry.target.length <= MAX_AUDIT_TARGET ? entry.target : null,
        JSON.stringify(sanitizeAuditDetail(entry.detail)),
      ],
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
