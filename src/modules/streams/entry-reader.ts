import { parseUtcTimestamp } from 'src/common/time/time';
import { parseJsonLossless } from 'src/modules/streams/big-json';

/** Why an entry was parked: names the field, never echoes its value. */
export class MalformedEntry extends Error {}

const INT64_MAX = 2n ** 63n - 1n;

/** Typed, strict reads of one stream entry's JSON object; every failure is a MalformedEntry. */
export class EntryReader {
  private constructor(private readonly record: Record<string, unknown>) {}

  static parse(data: string | null): EntryReader {
    if (data === null) throw new MalformedEntry('missing data field');
    let parsed: unknown;
    try {
      parsed = parseJsonLossless(data);
    } catch {
      throw new MalformedEntry('data is not JSON');
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new MalformedEntry('data is not a JSON object');
    return new EntryReader(parsed as Record<string, unknown>);
  }

  /** The workspace id when the entry names one, for parking and gap records. */
  workspaceHint(): string | null {
    const value = this.record.workspace_id;
    return typeof value === 'string' && value.length > 0 && value.length <= 64 ? value : null;
  }

  has(name: string): boolean {
    return this.record[name] !== undefined && this.record[name] !== null;
  }

  string(name: string, max = 256): string {
    const value = this.record[name];
    if (typeof value !== 'string' || value.length === 0 || value.length > max) throw new MalformedEntry(`${name} must be a string of 1-${max} characters`);
    return value;
  }

  optionalString(name: string, max = 256): string | null {
    return this.has(name) ? this.string(name, max) : null;
  }

  oneOf<T extends string>(name: string, allowed: readonly T[]): T {
    const value = this.record[name];
    if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) throw new MalformedEntry(`${name} is not an allowed value`);
    return value as T;
  }

  optionalOneOf<T extends string>(name: string, allowed: readonly T[]): T | null {
    return this.has(name) ? this.oneOf(name, allowed) : null;
  }

  /** A non-negative safe integer (counts, revisions, statuses). */
  int(name: string, min = 0): number {
    const value = this.record[name];
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) throw new MalformedEntry(`${name} must be an integer >= ${min}`);
    return value;
  }

  optionalInt(name: string): number | null {
    return this.has(name) ? this.int(name) : null;
  }

  /** A non-negative int64, exact beyond 2^53, as a decimal string (how it travels to PostgreSQL). */
  bigint(name: string): string {
    const value = this.record[name];
    // The common case, a safe integer, needs no BigInt (one per field of every entry adds up).
    if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return String(value);
    const big = typeof value === 'string' && /^\d{1,19}$/.test(value) ? BigInt(value) : null;
    if (big === null || big > INT64_MAX) throw new MalformedEntry(`${name} must be a non-negative int64`);
    return big.toString();
  }

  optionalBigint(name: string): string | null {
    return this.has(name) ? this.bigint(name) : null;
  }

  time(name: string): Date {
    const value = this.record[name];
    const date = typeof value === 'string' && value.length <= 64 ? parseUtcTimestamp(value) : null;
    if (!date) throw new MalformedEntry(`${name} must be an RFC 3339 UTC timestamp`);
    return date;
  }

  optionalObject(name: string): Record<string, unknown> | null {
    if (!this.has(name)) return null;
    const value = this.record[name];
    if (typeof value !== 'object' || Array.isArray(value)) throw new MalformedEntry(`${name} must be an object`);
    return value as Record<string, unknown>;
  }
}
