import { Jwks, verifyCompactJws } from 'src/common/signing/jws';
import { ChainedRow, GENESIS_HASH, linkHash } from 'src/modules/audit/audit-chain';
import { isJsonObject } from 'src/common/json/json';

/** Why a trail does not verify (docs/audit.md, "Verifying"). */
export type FailureReason = 'modified' | 'missing' | 'reordered' | 'bad signature' | 'truncated before checkpoint';

export interface Failure {
  seq: number;
  reason: FailureReason;
}

/** An exported line of the trail: the stored row plus its links. */
export interface ExportedRow extends ChainedRow {
  /** Null only on a range's first row whose predecessor is not stored (it is missing). */
  prev_hash: string | null;
  chain_hash: string;
}

/** The signed content of a checkpoint. */
export interface CheckpointPayload {
  workspace_id: string;
  seq: number;
  chain_hash: string;
  signed_at: string;
}

export interface VerifySummary {
  ok: boolean;
  failure: Failure | null;
  workspaceId: string | null;
  rows: number;
  firstSeq: number | null;
  lastSeq: number | null;
  checkpoints: number;
  /** Highest seq a checkpoint with a good signature vouches for. */
  signedThrough: number | null;
}

/** Only the stored fields are hashed; anything else on an exported line is ignored. */
function chainedFields(row: ChainedRow): ChainedRow {
  const { workspace_id, seq, event_id, actor, action, target, detail, occurred_at } = row;
  return { workspace_id, seq, event_id, actor, action, target, detail, occurred_at };
}

const isCheckpoint = (p: unknown): p is CheckpointPayload =>
  isJsonObject(p) && typeof p.workspace_id === 'string' && Number.isSafeInteger(p.seq) && typeof p.chain_hash === 'string' && typeof p.signed_at === 'string';

/**
 * Checks a trail in `seq` order with constant memory (one row of lookahead) against checkpoints
 * given first: feed `checkpoint()` for each, then `row()` for each row in order, then `finish()`.
 * Used offline on an export (`audit:verify`) and on the database (`audit:check`).
 */
export class ChainVerifier {
  private readonly vouched = new Map<number, string>();
  private readonly failures: Failure[] = [];
  private workspaceId: string | null = null;
  private pending: ExportedRow | null = null;
  private prevHash: string | null = null;
  private expectedSeq: number | null = null;
  private broken = false;
  private rows = 0;
  private firstSeq: number | null = null;
  private lastSeq: number | null = null;
  private checkpoints = 0;
  private signedThrough: number | null = null;

  constructor(private readonly keys: Jwks) {}

  /** A checkpoint JWS; one with a bad signature fails at the seq it claims (or 0 when unreadable). */
  checkpoint(jws: string): void {
    this.checkpoints += 1;
    const check = verifyCompactJws(jws, this.keys);
    if (!check.ok || !isCheckpoint(check.payload)) {
      this.fail(claimedSeq(jws), 'bad signature');
      return;
    }
    const payload = check.payload;
    this.workspaceId ??= payload.workspace_id;
    if (payload.workspace_id !== this.workspaceId) {
      this.fail(payload.seq, 'bad signature');
      return;
    }
    // Two genuine checkpoints of one seq that disagree: the row cannot match both.
    const earlier = this.vouched.get(payload.seq);
    this.vouched.set(payload.seq, earlier === undefined || earlier === payload.chain_hash ? payload.chain_hash : 'conflicting checkpoints');
  }

  row(row: ExportedRow): void {
    if (this.pending) this.judge(this.pending, row);
    this.pending = row;
  }

  /** Ends the trail; `headSeq` (the database's own count, for `audit:check`) names rows that must exist. */
  finish(headSeq = 0): VerifySummary {
    if (this.pending) this.judge(this.pending, null);
    this.pending = null;
    if (!this.broken) {
      const last = this.lastSeq ?? 0;
      const beyond = [...this.vouched.keys()].filter((seq) => seq > last);
      if (beyond.length > 0) this.fail(last + 1, 'truncated before checkpoint');
      if (headSeq > last) this.fail(last + 1, 'missing');
      const within = [...this.vouched.keys()].filter((seq) => seq <= last && (this.firstSeq === null || seq >= this.firstSeq));
      this.signedThrough = within.length ? Math.max(...within) : null;
    }
    const failure = this.failures.reduce<Failure | null>((first, f) => (first === null || f.seq < first.seq ? f : first), null);
    return {
      ok: failure === null,
      failure,
      workspaceId: this.workspaceId,
      rows: this.rows,
      firstSeq: this.firstSeq,
      lastSeq: this.lastSeq,
      checkpoints: this.checkpoints,
      signedThrough: failure === null ? this.signedThrough : null,
    };
  }

  private fail(seq: number, reason: FailureReason): void {
    this.failures.push({ seq, reason });
  }

  /** Judges `row` knowing the row after it (`next`), which tells a swap from a modification. */
  private judge(row: ExportedRow, next: ExportedRow | null): void {
    if (this.broken) return;
    this.rows += 1;
    if (this.expectedSeq === null) {
      // The first row: a trail from seq 1 starts at the genesis link; a later range trusts its prev_hash.
      this.expectedSeq = row.seq;
      this.firstSeq = row.seq;
      this.workspaceId ??= row.workspace_id;
      if (row.seq > 1 && row.prev_hash === null) return this.stop(row.seq - 1, 'missing');
      this.prevHash = row.seq === 1 ? GENESIS_HASH : row.prev_hash;
    }
    const expected = this.expectedSeq;
    const prev = this.prevHash!;
    if (row.seq !== expected || row.workspace_id !== this.workspaceId) {
      if (next?.seq === expected || row.seq < expected) return this.stop(Math.min(row.seq, expected), 'reordered');
      return this.stop(expected, row.workspace_id !== this.workspaceId ? 'modified' : 'missing');
    }
    if (row.prev_hash !== prev || linkHash(prev, chainedFields(row)) !== row.chain_hash) {
      // Two rows whose seq were swapped: the next row, put at this seq, links where this one should.
      if (next && next.seq === expected + 1 && linkHash(prev, { ...chainedFields(next), seq: expected }) === next.chain_hash) return this.stop(expected, 'reordered');
      return this.stop(expected, 'modified');
    }
    const vouched = this.vouched.get(row.seq);
    if (vouched !== undefined && vouched !== row.chain_hash) return this.stop(row.seq, 'modified');
    this.lastSeq = row.seq;
    this.prevHash = row.chain_hash;
    this.expectedSeq = expected + 1;
  }

  private stop(seq: number, reason: FailureReason): void {
    this.broken = true;
    this.fail(seq, reason);
  }
}

/** The seq a checkpoint claims, read without trusting it (0 when unreadable). */
function claimedSeq(jws: string): number {
  try {
    const payload = JSON.parse(Buffer.from(jws.split('.')[1] ?? '', 'base64url').toString('utf8')) as { seq?: unknown };
    return Number.isSafeInteger(payload.seq) ? (payload.seq as number) : 0;
  } catch {
    return 0;
  }
}

/** The one-line summary of a verification. */
export function describeVerification(s: VerifySummary): string {
  if (s.failure) return `audit trail broken at seq ${s.failure.seq}: ${s.failure.reason}`;
  if (s.rows === 0) return `audit trail verified: no rows, ${s.checkpoints} checkpoints`;
  const signed = s.signedThrough === null ? 'no checkpoint inside the range' : `signed through seq ${s.signedThrough}`;
  return `audit trail verified: workspace ${s.workspaceId}, ${s.rows} rows (seq ${s.firstSeq}..${s.lastSeq}), ${s.checkpoints} checkpoints, ${signed}`;
}
