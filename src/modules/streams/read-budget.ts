/** A stream entry as Redis sends it: its id and its fields as a flat [name, value, ...] list. */
export type RawEntry = [id: string, fields: string[] | null];

/**
 * Most entries one read asks Redis for. A reply is held whole before anything of it can be
 * released, so this bounds what one read can bring in beyond the byte budget when entries grow
 * larger than any the pass has seen (1,000 entries; 20 reads make a full pass of small entries).
 */
export const READ_CHUNK = 1_000;

/** What a pass counts for an entry: the length of its field names and values (bytes for ASCII JSON). */
export function entrySize([, fields]: RawEntry): number {
  let size = 0;
  if (fields) for (const field of fields) size += field.length;
  return size;
}

/**
 * What one pass may still admit: entries up to a count, and their data up to a byte budget. The
 * entry that reaches the budget is the last one admitted, so a pass holds at most the budget plus
 * one entry. Reads are sized from the largest entry seen so far (`expected` is the previous pass's
 * largest), so that they stay within the bytes left when entry sizes hold steady.
 */
export class ReadBudget {
  private entries = 0;
  /** Bytes of the entries admitted so far. */
  bytes = 0;
  /** The largest entry this pass has read, admitted or not. */
  largest = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly maxBytes: number,
    private readonly expected: number,
  ) {}

  get full(): boolean {
    return this.entries >= this.maxEntries || this.bytes >= this.maxBytes;
  }

  /**
   * How many entries the next read may ask for: at most READ_CHUNK and the entries left, and no
   * more than fit in the bytes left if each is as large as the largest seen; at least one.
   */
  nextCount(): number {
    const largest = Math.max(this.largest, this.expected);
    const fit = largest > 0 ? Math.floor((this.maxBytes - this.bytes) / largest) : READ_CHUNK;
    return Math.max(1, Math.min(READ_CHUNK, this.maxEntries - this.entries, fit));
  }

  /** Admits the entries of a read in order until full; answers those admitted (a prefix of `read`). */
  take(read: RawEntry[]): RawEntry[] {
    let admitted = 0;
    for (const entry of read) {
      const size = entrySize(entry);
      if (size > this.largest) this.largest = size;
      if (this.full) continue;
      this.entries += 1;
      this.bytes += size;
      admitted += 1;
    }
    return admitted === read.length ? read : read.slice(0, admitted);
  }
}
