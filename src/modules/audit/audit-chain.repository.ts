import { Injectable } from '@nestjs/common';
import { And, DataSource, LessThanOrEqual, MoreThan } from 'typeorm';
import { TRAIL_BATCH } from 'src/modules/audit/audit-events.repository';
import { AuditChainHead } from 'src/modules/audit/entities/audit-chain-head.entity';
import { AuditCheckpoint } from 'src/modules/audit/entities/audit-checkpoint.entity';

export interface ChainHead {
  workspace_id: string;
  seq: string;
  chain_hash: string;
}

// hand-written: the heads with no checkpoint at or beyond them (NOT EXISTS over audit_checkpoints), optionally one workspace's.
const GROWN_HEADS = `SELECT h.workspace_id, h.seq, h.chain_hash FROM audit_chain_heads h
  WHERE ($1::text IS NULL OR h.workspace_id = $1) AND h.seq > 0
    AND NOT EXISTS (SELECT 1 FROM audit_checkpoints c WHERE c.workspace_id = h.workspace_id AND c.seq >= h.seq)
  ORDER BY h.workspace_id`;
// hand-written: ON CONFLICT DO NOTHING ... RETURNING, so the caller knows whether its signature is the one kept.
const KEEP_CHECKPOINT = `INSERT INTO audit_checkpoints (workspace_id, seq, chain_hash, signed_at, jws) VALUES ($1, $2, $3, $4, $5)
  ON CONFLICT DO NOTHING RETURNING seq`;
// hand-written: the head and the highest checkpoint in one round trip, read together before an export starts.
const BOUNDS = `SELECT (SELECT seq FROM audit_chain_heads WHERE workspace_id = $1) AS head,
  (SELECT max(seq) FROM audit_checkpoints WHERE workspace_id = $1) AS checkpointed`;

/** `audit_chain_heads` (read; the events repository's append writes it) and `audit_checkpoints`: the chain's signed checkpoints. */
@Injectable()
export class AuditChainRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** The chain heads (of every workspace, or of `workspaceId`) grown since their last checkpoint, in workspace order. */
  grownHeads(workspaceId?: string): Promise<ChainHead[]> {
    return this.dataSource.query(GROWN_HEADS, [workspaceId ?? null]);
  }

  /** Keeps a signed checkpoint; false when one of (workspace, seq) is kept already (another replica's). */
  async keep(checkpoint: { workspace_id: string; seq: number; chain_hash: string; signed_at: Date; jws: string }): Promise<boolean> {
    const { workspace_id, seq, chain_hash, signed_at, jws } = checkpoint;
    const kept: unknown[] = await this.dataSource.query(KEEP_CHECKPOINT, [workspace_id, seq, chain_hash, signed_at, jws]);
    return kept.length > 0;
  }

  /** The head's seq and the highest checkpointed seq (null when none). */
  async bounds(workspaceId: string): Promise<{ head: string | null; checkpointed: string | null }> {
    const [row]: { head: string | null; checkpointed: string | null }[] = await this.dataSource.query(BOUNDS, [workspaceId]);
    return row;
  }

  /** The head's seq; undefined when the workspace has no chain yet. */
  async headSeq(workspaceId: string): Promise<string | undefined> {
    const row = await this.dataSource.manager.findOne(AuditChainHead, { select: { workspaceId: true, seq: true }, where: { workspaceId } });
    return row?.seq;
  }

  /** Up to TRAIL_BATCH checkpoints with seq in (after, to], in seq order. */
  async checkpointBatch(workspaceId: string, after: number, to: number): Promise<{ seq: string; jws: string }[]> {
    const rows = await this.dataSource.manager.find(AuditCheckpoint, {
      select: { workspaceId: true, seq: true, jws: true },
      where: { workspaceId, seq: And(MoreThan(String(after)), LessThanOrEqual(String(to))) },
      order: { seq: 'ASC' },
      take: TRAIL_BATCH,
    });
    return rows.map((r) => ({ seq: r.seq, jws: r.jws }));
  }
}
