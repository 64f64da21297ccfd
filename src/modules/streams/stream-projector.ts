import { EntityManager } from 'typeorm';
import { Tx } from 'src/database/transaction';
import { EntryReader } from 'src/modules/streams/entry-reader';

export type StreamName = 'receipts' | 'usage';

/** One well-formed entry, ready to project. */
export interface ParsedEntry<T> {
  id: string;
  workspaceId: string;
  value: T;
  /** The partition key of the row it writes (its month must have a partition), or null. */
  partitionTime: Date | null;
}

/** A malformed entry: kept in `stream_parked`, acknowledged, never retried. */
export interface ParkedEntry {
  id: string;
  workspaceId: string | null;
  reason: string;
}

/** What a read model plugs into the consumer. */
export interface StreamProjector<T> {
  stream: StreamName;
  /** The month-partitioned table its rows go to. */
  partitioned: string;
  /** Reads one entry; throws MalformedEntry. */
  parse(reader: EntryReader): Omit<ParsedEntry<T>, 'id'>;
  /** Projects entries (any mix of workspaces) inside the caller's transaction (`tx`, for after-commit work); must be idempotent. */
  project(manager: EntityManager, entries: ParsedEntry<T>[], tx?: Tx): Promise<void>;
  /** Records what parking loses (usage gaps), in the transaction that parks. */
  parked?(manager: EntityManager, entries: ParkedEntry[]): Promise<void>;
  /**
   * Deletes at most `limit` non-partitioned rows of one workspace older than `cutoff` (partitions
   * are dropped by the consumer) in the caller's transaction; answers how many it deleted.
   */
  retain(manager: EntityManager, workspaceId: string, cutoff: Date, limit: number): Promise<number>;
}

export interface PassOptions {
  /** Most entries admitted in one pass, reclaimed and fresh together. */
  batchLimit?: number;
  /** Most bytes of entry data admitted in one pass (the entry that reaches it is the last); default STREAM_BATCH_MAX_BYTES. */
  batchBytes?: number;
  /** How long an entry must have been pending before it is reclaimed from its consumer. */
  claimIdleMs?: number;
  /** How many transactions project a batch concurrently, each over its own set of workspaces. */
  shards?: number;
}

export interface PassResult {
  reclaimed: number;
  fresh: number;
  projected: number;
  parked: number;
  /** Entries of workspace batches that rolled back; they stay pending and are reclaimed later. */
  failed: number;
  /** Bytes of entry data the pass admitted (see `entrySize`). */
  bytes: number;
}

/** The consumer group every replica reads the gateway streams in. */
export const GROUP = 'control';
export const BATCH_LIMIT = 20_000;
/** Concurrent projection transactions per batch (PostgreSQL does the work; one per core or so). */
export const PROJECT_SHARDS = 3;
export const CLAIM_IDLE_MS = 60_000;

export const monthStart = (at: Date, offset = 0) => new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + offset, 1));
/** `YYYY-MM` of the month `at` falls in. */
export const monthKey = (at: Date) => monthStart(at).toISOString().slice(0, 7);

/** One date in each distinct month of the entries' partition keys. */
export function monthsOf(entries: ParsedEntry<unknown>[]): Date[] {
  const months = new Map<number, Date>();
  for (const { partitionTime: at } of entries) if (at) months.set(at.getUTCFullYear() * 12 + at.getUTCMonth(), at);
  return [...months.values()];
}
