import { Inject, Injectable } from '@nestjs/common';
import { appendFile } from 'node:fs/promises';
import { APP_CONFIG, AppConfig } from 'src/config/config';
import { canonicalJson } from 'src/common/crypto/crypto';
import { ControlSigning } from 'src/platform/signing/control-signing.service';
import { GENESIS_HASH, toChainedRow } from 'src/common/crypto/audit-chain';
import { AuditChainRepository } from 'src/modules/audit/audit-chain.repository';
import { AuditEventsRepository, TRAIL_BATCH } from 'src/modules/audit/audit-events.repository';
import { WorkspacesRepository } from 'src/platform/tenancy/workspaces.repository';

export { TRAIL_BATCH } from 'src/modules/audit/audit-events.repository';
import { ChainVerifier, CheckpointPayload, ExportedRow, VerifySummary } from 'src/modules/audit/audit-verifier';

export interface SeqRange {
  from?: number;
  to?: number;
}

/** The tamper-evident side of the audit trail: checkpoints, export and the in-database check (docs/audit.md). */
@Injectable()
export class AuditTrailService {
  constructor(
    private readonly events: AuditEventsRepository,
    private readonly chain: AuditChainRepository,
    private readonly workspaces: WorkspacesRepository,
    private readonly signing: ControlSigning,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /**
   * Signs and keeps a checkpoint of the chain head of every workspace (or the one given) that grew
   * since its last checkpoint. With AUDIT_ANCHOR_FILE each one is appended there first: a checkpoint
   * that cannot be anchored is not kept either (the pass fails and the next one retries), so every
   * kept checkpoint is also where the database writer cannot rewrite it (docs/audit.md, "Threat model").
   */
  async checkpoint(workspaceId?: string): Promise<CheckpointPayload[] | null> {
    if (workspaceId !== undefined && !(await this.workspaces.exists(workspaceId))) return null;
    const heads = await this.chain.grownHeads(workspaceId);
    const signed: CheckpointPayload[] = [];
    for (const head of heads) {
      const payload = this.payload(head.workspace_id, Number(head.seq), head.chain_hash);
      const jws = this.signing.sign(payload);
      // Another replica may anchor its own signature of the same head: both vouch for the same chain_hash.
      if (this.config.auditAnchorFile) await appendFile(this.config.auditAnchorFile, `${canonicalJson({ checkpoint: jws })}\n`);
      // Replicas running the job together sign the same head: the first one kept wins.
      const kept = await this.chain.keep({ workspace_id: payload.workspace_id, seq: payload.seq, chain_hash: payload.chain_hash, signed_at: new Date(payload.signed_at), jws });
      if (kept) signed.push(payload);
    }
    return signed;
  }

  /**
   * The trail as NDJSON lines, pulled one at a time (the caller's backpressure): rows in seq order
   * read in batches, then the stored checkpoints of the range, then a fresh checkpoint of the last
   * row. The bounds are read here, before any byte is sent (a failure is still an ordinary error
   * answer), so rows appended meanwhile are not half-included.
   */
  async exportLines(workspaceId: string, range: SeqRange): Promise<AsyncGenerator<string>> {
    const from = range.from ?? 1;
    const bounds = await this.chain.bounds(workspaceId);
    const head = Number(bounds.head ?? 0);
    const rowsTo = Math.min(range.to ?? head, head);
    // A checkpoint beyond the stored rows is what reveals a dropped tail: never clamp it to the head.
    const checkpointsTo = range.to ?? Math.max(head, Number(bounds.checkpointed ?? 0));
    return this.lines(workspaceId, from, rowsTo, checkpointsTo);
  }

  /** One chunk per batch of rows (a write, and an HTTP chunk, per line would cost more than the line). */
  private async *lines(workspaceId: string, from: number, rowsTo: number, checkpointsTo: number): AsyncGenerator<string> {
    let last: ExportedRow | null = null;
    let chunk = '';
    let count = 0;
    for await (const row of this.rows(workspaceId, from, rowsTo)) {
      last = row;
      chunk += `${canonicalJson(row)}\n`;
      if (++count % TRAIL_BATCH === 0) {
        yield chunk;
        chunk = '';
      }
    }
    if (chunk) yield chunk;
    for await (const jws of this.checkpoints(workspaceId, from, checkpointsTo)) yield `${canonicalJson({ checkpoint: jws })}\n`;
    if (last) yield `${canonicalJson({ checkpoint: this.signing.sign(this.payload(workspaceId, last.seq, last.chain_hash)) })}\n`;
    // Stored checkpoints may be signed by keys retired since: the current key vouches for them.
    const retired = this.signing.retiredJwks();
    if (retired.keys.length > 0) yield `${canonicalJson({ retired_keys: this.signing.sign(retired) })}\n`;
  }

  /** Recomputes the workspace's chain in the database against its checkpoints and its head: the first broken link. */
  async check(workspaceId: string): Promise<VerifySummary | null> {
    const head = await this.chain.headSeq(workspaceId);
    if (head === undefined && !(await this.workspaces.exists(workspaceId))) return null;
    // The database's tail grows between checkpoints (the job signs it within a minute): allowed here, and counted.
    const verifier = new ChainVerifier(this.signing.historyJwks(), { workspaceId, allowUnsignedTail: true });
    for await (const jws of this.checkpoints(workspaceId, 1, Number.MAX_SAFE_INTEGER)) verifier.checkpoint(jws);
    for await (const row of this.rows(workspaceId, 1, Number.MAX_SAFE_INTEGER)) verifier.row(row);
    return verifier.finish(Number(head ?? 0));
  }

  private payload(workspaceId: string, seq: number, chainHash: string): CheckpointPayload {
    return { workspace_id: workspaceId, seq, chain_hash: chainHash, signed_at: new Date().toISOString() };
  }

  /** Rows `from..to` with their links; the first row's `prev_hash` is null when its predecessor is not stored. */
  private async *rows(workspaceId: string, from: number, to: number): AsyncGenerator<ExportedRow> {
    let prev: string | null = GENESIS_HASH;
    if (from > 1) {
      prev = (await this.events.chainHashAt(workspaceId, from - 1)) ?? null;
    }
    let after = from - 1;
    let first = true;
    for (;;) {
      const batch = await this.events.trailBatch(workspaceId, after, to);
      for (const stored of batch) {
        const row = toChainedRow(stored);
        // A first row later than `from`: its predecessor is missing, whatever `from - 1` holds.
        if (first && row.seq !== from) prev = row.seq === 1 ? GENESIS_HASH : null;
        first = false;
        yield { ...row, prev_hash: prev, chain_hash: stored.chain_hash };
        prev = stored.chain_hash;
      }
      if (batch.length < TRAIL_BATCH) return;
      after = Number(batch[batch.length - 1].seq);
    }
  }

  private async *checkpoints(workspaceId: string, from: number, to: number): AsyncGenerator<string> {
    let after = from - 1;
    for (;;) {
      const batch = await this.chain.checkpointBatch(workspaceId, after, to);
      for (const c of batch) yield c.jws;
      if (batch.length < TRAIL_BATCH) return;
      after = Number(batch[batch.length - 1].seq);
    }
  }
}
