import { createHash } from 'node:crypto';
import { canonicalJson } from 'src/common/crypto/crypto';

/** The previous link of seq 1: 32 zero bytes, as hex. */
export const GENESIS_HASH = '0'.repeat(64);

/** An audit row as stored and as hashed (docs/audit.md, "The chain"). */
export interface ChainedRow {
  workspace_id: string;
  seq: number;
  event_id: string;
  actor: { user_id: string | null; email: string | null };
  action: string;
  target: string | null;
  detail: Record<string, unknown>;
  /** RFC 3339 UTC with six fractional digits (stored to the millisecond). */
  occurred_at: string;
}

/** `occurred_at` as hashed and exported: `2026-01-02T03:04:05.678000Z` (the column keeps milliseconds). */
export function formatChainTime(at: Date): string {
  return `${at.toISOString().slice(0, -1)}000Z`;
}

/** SHA-256 over the previous link (32 raw bytes) followed by the row's canonical JSON; 64 lowercase hex. */
export function linkHash(prevHash: string, row: ChainedRow): string {
  return createHash('sha256').update(Buffer.from(prevHash, 'hex')).update(canonicalJson(row), 'utf8').digest('hex');
}

/**
 * The row's canonical JSON around its two values the database decides (`occurred_at` and `seq`):
 * `before + occurred_at + between + seq + after` is `canonicalJson(row)`, members in sorted order
 * (action, actor, detail, event_id, occurred_at, seq, target, workspace_id).
 */
export function canonicalParts(row: Omit<ChainedRow, 'seq' | 'occurred_at'>): { before: string; between: string; after: string } {
  const j = (value: unknown) => canonicalJson(value);
  return {
    before: `{"action":${j(row.action)},"actor":${j(row.actor)},"detail":${j(row.detail)},"event_id":${j(row.event_id)},"occurred_at":"`,
    between: `","seq":`,
    after: `,"target":${j(row.target)},"workspace_id":${j(row.workspace_id)}}`,
  };
}

/** A stored `audit_events` row read back as the chained fields. */
export interface StoredAuditRow {
  id: string;
  workspace_id: string;
  seq: string | number;
  actor_user_id: string | null;
  actor_email: string | null;
  action: string;
  target: string | null;
  detail: Record<string, unknown>;
  occurred_at: Date;
  chain_hash: string;
}

export function toChainedRow(row: Omit<StoredAuditRow, 'chain_hash'>): ChainedRow {
  return {
    workspace_id: row.workspace_id,
    seq: Number(row.seq),
    event_id: row.id,
    actor: { user_id: row.actor_user_id, email: row.actor_email },
    action: row.action,
    target: row.target,
    detail: row.detail,
    occurred_at: formatChainTime(row.occurred_at),
  };
}
