import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { formatChainTime, GENESIS_HASH, linkHash } from 'src/common/crypto/audit-chain';

export interface RawAuditRow {
  workspaceId: string;
  action: string;
  occurredAt: string;
  actor?: string | null;
  target?: string | null;
  detail?: object;
}

/**
 * Writes an audit row around the service (a chosen `occurred_at`, any action or detail), chained
 * as the service chains it, so the trail stays verifiable.
 */
export async function insertAuditRow(db: DataSource, row: RawAuditRow): Promise<string> {
  return db.transaction(async (m) => {
    const [head]: { seq: string; chain_hash: string }[] = await m.query(
      `INSERT INTO audit_chain_heads (workspace_id, seq, chain_hash) VALUES ($1, 0, $2)
       ON CONFLICT (workspace_id) DO UPDATE SET seq = audit_chain_heads.seq RETURNING seq, chain_hash`,
      [row.workspaceId, GENESIS_HASH],
    );
    const id = `aud_${randomBytes(12).toString('hex')}`;
    const seq = Number(head.seq) + 1;
    const at = new Date(row.occurredAt);
    const hash = linkHash(head.chain_hash, {
      workspace_id: row.workspaceId,
      seq,
      event_id: id,
      actor: { user_id: row.actor ?? null, email: null },
      action: row.action,
      target: row.target ?? null,
      detail: (row.detail ?? {}) as Record<string, unknown>,
      occurred_at: formatChainTime(at),
    });
    await m.query(`UPDATE audit_chain_heads SET seq = $2, chain_hash = $3 WHERE workspace_id = $1`, [row.workspaceId, seq, hash]);
    await m.query(
      `INSERT INTO audit_events (id, workspace_id, actor_user_id, actor_email, action, target, detail, occurred_at, seq, chain_hash) VALUES ($1, $2, $3, NULL, $4, $5, $6, $7, $8, $9)`,
      [id, row.workspaceId, row.actor ?? null, row.action, row.target ?? null, JSON.stringify(row.detail ?? {}), at, seq, hash],
    );
    return id;
  });
}
