/**
 * Credentials that already passed verification, each kept until its own expiry, so a client that
 * reuses a token skips the signature check and the lookups behind it. Bounded: when full, expired
 * entries go first, then everything.
 */
export class VerifiedTokens<T> {
  private readonly entries = new Map<string, { value: T; expiresAt: number }>();

  constructor(private readonly capacity = 1024) {}

  get(token: string): T | undefined {
    const entry = this.entries.get(token);
    if (!entry) return undefined;
    if (entry.expiresAt > Date.now()) return entry.value;
    this.entries.delete(token);
    return undefined;
  }

  /** Remembers `value` for `token` until `expiresAt` (epoch ms). */
  set(token: string, value: T, expiresAt: number): void {
    if (this.entries.size >= this.capacity) {
      const now = Date.now();
      for (const [t, entry] of this.entries) if (entry.expiresAt <= now) this.entries.delete(t);
      if (this.entries.size >= this.capacity) this.entries.clear();
    }
    this.entries.set(token, { value, expiresAt });
  }
}
