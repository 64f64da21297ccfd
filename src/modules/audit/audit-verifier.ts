import { isEd25519Jwk, Jwks, verifyCompactJws } from 'src/common/signing/jws';
import { ChainedRow, GENESIS_HASH, linkHash } from 'src/common/crypto/audit-chain';
import { isJsonObject } from 'src/common/json/json';
import { isStorableText } from 'src/common/http/text';

/** Why a trail does not verify (docs/audit.md, "Verifying"). */
export type FailureReason = 'modified' | 'missing' | 'reordered' | 'bad signature' | 'truncated before checkpoint' | 'unsigned tail';

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
  /** Checkpoints kept from earlier exports (`--checkpoints`) that name this trail's workspace. */
  keptCheckpoints: number;
  /** Highest seq a checkpoint with a good signature vouches for. */
  signedThrough: number | null;
  /** Rows after `signedThrough` that no good checkpoint vouches for (only ever non-zero when allowed). */
  unvouched: number;
}

export interface VerifyOptions {
  /** The trail's workspace when known beforehand (the database's check); else the first row's, or the first checkpoint's. */
  workspaceId?: string;
  /** Accept rows after the last good checkpoint (the database's live tail), reporting how many. */
  allowUnsignedTail?: boolean;
}

const HEX64 = /^[0-9a-f]{64}$/;
const CHAIN_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
const RFC3339_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/;
const ROW_MEMBERS = ['action', 'actor', 'chain_hash', 'detail', 'event_id', 'occurred_at', 'prev_hash', 'seq', 'target', 'workspace_id'];
const CHECKPOINT_MEMBERS = ['chain_hash', 'seq', 'signed_at', 'workspace_id'];

const hasExactly = (value: Record<string, unknown>, members: string[]) => {
  const keys = Object.keys(value).sort();
  return keys.length === members.length && keys.every((key, i) => key === members[i]);
};
const isText = (v: unknown): v is string => typeof v === 'string' && isStorableText(v);
const isTextOrNull = (v: unknown) => v === null || isText(v);
const isSeq = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) > 0;
const isDetailValue = (v: unknown) => isText(v) || typeof v === 'boolean' || Number.isSafeInteger(v) || (Array.isArray(v) && v.every(isText));

/**
 * An exported row exactly as documented (docs/audit.md, "The chain" and "Export"): the ten members
 * and nothing else, each of its type, `seq` a safe positive integer, hashes 64 lowercase hex, and
 * only text that hashes losslessly (no NUL, no lone surrogate). Anything else is not a row the
 * service can have written, whatever its hash says.
 */
export function isExportedRow(value: unknown): value is ExportedRow {
  if (!isJsonObject(value) || !hasExactly(value, ROW_MEMBERS)) return false;
  const { actor, detail } = value;
  return (
    isText(value.workspace_id) &&
    isSeq(value.seq) &&
    isText(value.event_id) &&
    isJsonObject(actor) &&
    hasExactly(actor, ['email', 'user_id']) &&
    isTextOrNull(actor.user_id) &&
    isTextOrNull(actor.email) &&
    isText(value.action) &&
    isTextOrNull(value.target) &&
    isJsonObject(detail) &&
    Object.entries(detail).every(([key, v]) => isStorableText(key) && isDetailValue(v)) &&
    typeof value.occurred_at === 'string' &&
    CHAIN_TIME.test(value.occurred_at) &&
    (value.prev_hash === null || (typeof value.prev_hash === 'string' && HEX64.test(value.prev_hash))) &&
    typeof value.chain_hash === 'string' &&
    HEX64.test(value.chain_hash)
  );
}

/** A checkpoint's signed payload exactly as documented: the four members, `seq` a safe positive integer, the hash 64 lowercase hex. */
export function isCheckpointPayload(p: unknown): p is CheckpointPayload {
  return (
    isJsonObject(p) &&
    hasExactly(p, CHECKPOINT_MEMBERS) &&
    isText(p.workspace_id) &&
    isSeq(p.seq) &&
    typeof p.chain_hash === 'string' &&
    HEX64.test(p.chain_hash) &&
    typeof p.signed_at === 'string' &&
    RFC3339_UTC.test(p.signed_at)
  );
}

/** Only the stored fields are hashed; anything else on an exported line is ignored. */
function chainedFields(row: ChainedRow): ChainedRow {
  const { workspace_id, seq, event_id, actor, action, target, detail, occurred_at } = row;
  return { workspace_id, seq, event_id, actor, action, target, detail, occurred_at };
}

/**
 * Checks a trail in `seq` order with constant memory (one row of lookahead) against checkpoints
 * given first: feed `checkpoint()` for each (the trail's own, then any kept from earlier exports),
 * then `row()` for each row in order, then `finish()`. Used offline on an export (`audit:verify`)
 * and on the database (`audit:check`).
 */
export class ChainVerifier {
  private readonly vouched = new Map<number, string>();
  private readonly failures: Failure[] = [];
  private workspaceId: string | null;
  private pending: unknown = undefined;
  private prevHash: string | null = null;
  private expectedSeq: number | null = null;
  private broken = false;
  private rows = 0;
  private firstSeq: number | null = null;
  private lastSeq: number | null = null;
  private checkpoints = 0;
  private keptCheckpoints = 0;

  /** The keys checkpoints verify under: the trusted ones given, and the retired ones they vouch for. */
  private keys: Jwks;

  constructor(
    private readonly trusted: Jwks,
    private readonly options: VerifyOptions = {},
  ) {
    this.keys = trusted;
    this.workspaceId = options.workspaceId ?? null;
  }

  /**
   * An export's `retired_keys` line: control's retired public keys, signed by a trusted key; they
   * then verify checkpoints too. Feed it before the checkpoints. One that does not verify, or
   * holds anything but such keys, fails as `bad signature` at 0.
   */
  retiredKeys(jws: unknown): void {
    const check = typeof jws === 'string' ? verifyCompactJws(jws, this.trusted) : { ok: false as const };
    const payload = check.ok ? check.payload : null;
    if (!isJsonObject(payload) || !hasExactly(payload, ['keys']) || !Array.isArray(payload.keys) || !payload.keys.every(isEd25519Jwk)) {
      this.fail(0, 'bad signature');
      return;
    }
    this.keys = { keys: [...this.keys.keys, ...payload.keys] };
  }

  /**
   * A checkpoint JWS (anything else, or one with a bad signature or payload, fails as `bad
   * signature` at the seq it claims, or 0 when unreadable). A `kept` one, from an earlier export or
   * an anchor file, is ignored when it names another workspace: such files may hold many.
   */
  checkpoint(jws: unknown, kept = false): void {
    const check = typeof jws === 'string' ? verifyCompactJws(jws, this.keys) : { ok: false as const };
    if (!check.ok || !isCheckpointPayload(check.payload)) {
      this.checkpoints += 1;
      this.fail(typeof jws === 'string' ? claimedSeq(jws) : 0, 'bad signature');
      return;
    }
    const payload = check.payload;
    if (kept && this.workspaceId !== null && payload.workspace_id !== this.workspaceId) return;
    if (kept) this.keptCheckpoints += 1;
    else this.checkpoints += 1;
    this.workspaceId ??= payload.workspace_id;
    if (payload.workspace_id !== this.workspaceId) {
      this.fail(payload.seq, 'bad signature');
      return;
    }
    // Two genuine checkpoints of one seq that disagree: the row cannot match both.
    const earlier = this.vouched.get(payload.seq);
    this.vouched.set(payload.seq, earlier === undefined || earlier === payload.chain_hash ? payload.chain_hash : 'conflicting checkpoints');
  }

  /** The next exported line that is not a checkpoint: validated strictly here (`isExportedRow`). */
  row(row: unknown): void {
    if (this.pending !== undefined) this.judge(this.pending, row);
    this.pending = row;
  }

  /** Ends the trail; `headSeq` (the database's own count, for `audit:check`) names rows that must exist. */
  finish(headSeq = 0): VerifySummary {
    if (this.pending !== undefined) this.judge(this.pending, undefined);
    this.pending = undefined;
    let signedThrough: number | null = null;
    let unvouched = 0;
    if (!this.broken) {
      const last = this.lastSeq ?? 0;
      const beyond = [...this.vouched.keys()].filter((seq) => seq > last);
      if (beyond.length > 0) this.fail(last + 1, 'truncated before checkpoint');
      if (headSeq > last) this.fail(last + 1, 'missing');
      const within = [...this.vouched.keys()].filter((seq) => seq <= last && (this.firstSeq === null || seq >= this.firstSeq));
      signedThrough = within.length ? Math.max(...within) : null;
      // A genuine export ends with a fresh checkpoint of its last row: rows after the last good one are
      // unvouched (a truncation already named above is the more precise finding).
      if (this.lastSeq !== null) unvouched = this.lastSeq - (signedThrough ?? this.firstSeq! - 1);
      if (unvouched > 0 && !this.options.allowUnsignedTail && this.failures.length === 0) this.fail(this.lastSeq! - unvouched + 1, 'unsigned tail');
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
      keptCheckpoints: this.keptCheckpoints,
      signedThrough: failure === null ? signedThrough : null,
      unvouched: failure === null ? unvouched : 0,
    };
  }

  private fail(seq: number, reason: FailureReason): void {
    this.failures.push({ seq, reason });
  }

  /** Judges `line` knowing the line after it (`after`), which tells a swap from a modification. */
  private judge(line: unknown, after: unknown): void {
    if (this.broken) return;
    this.rows += 1;
    if (!isExportedRow(line)) {
      // Not a row the service can have written (a member missing, extra or of another type): its place is modified.
      const claimed = isJsonObject(line) && isSeq(line.seq) ? line.seq : 1;
      return this.stop(this.expectedSeq ?? claimed, 'modified');
    }
    const row = line;
    const next = isExportedRow(after) ? after : null;
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
    return isSeq(payload.seq) ? payload.seq : 0;
  } catch {
    return 0;
  }
}

/** The one-line summary of a verification. */
export function describeVerification(s: VerifySummary): string {
  if (s.failure) return `audit trail broken at seq ${s.failure.seq}: ${s.failure.reason}`;
  if (s.rows === 0) return `audit trail verified: no rows, ${s.checkpoints} checkpoints`;
  const signed = s.signedThrough === null ? 'no checkpoint inside the range' : `signed through seq ${s.signedThrough}`;
  const kept = s.keptCheckpoints > 0 ? ` (+${s.keptCheckpoints} kept)` : '';
  const tail = s.unvouched > 0 ? `, ${s.unvouched} rows unvouched (seq ${s.lastSeq! - s.unvouched + 1}..${s.lastSeq}: no checkpoint covers them)` : '';
  return `audit trail verified: workspace ${s.workspaceId}, ${s.rows} rows (seq ${s.firstSeq}..${s.lastSeq}), ${s.checkpoints} checkpoints${kept}, ${signed}${tail}`;
}
