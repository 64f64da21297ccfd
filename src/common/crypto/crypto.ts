import { createHash, timingSafeEqual } from 'node:crypto';

export function sha256Hex(input: string | Buffer): string {
  return createHash('sha256').update(input).digest('hex');
}

/** `sha256:` plus 64 lowercase hex, the form the specification uses for content hashes. */
export function sha256Tagged(input: string | Buffer): string {
  return `sha256:${sha256Hex(input)}`;
}

/** Compares two strings without leaking where they differ (digests first, so lengths match). */
export function constantTimeEqual(a: string, b: string): boolean {
  const da = createHash('sha256').update(a).digest();
  const db = createHash('sha256').update(b).digest();
  return timingSafeEqual(da, db) && a.length === b.length;
}

/**
 * JSON with object keys sorted at every depth (by UTF-16 code units, as RFC 8785 orders them):
 * the input of every canonical hash. Written from sorted entries, never through an object
 * rebuilt in sorted order: JavaScript enumerates integer-like keys ("9", "10") first and
 * numerically whatever the insertion order, so `{"10":1,"9":2,"a":3}` would come out unsorted.
 * Values serialize as JSON.stringify does (toJSON, undefined members dropped, undefined array
 * items as null).
 */
export function canonicalJson(value: unknown): string {
  return canonical(value) as string;
}

function canonical(value: unknown): string | undefined {
  if (value !== null && typeof value === 'object' && typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    return canonical((value as { toJSON(): unknown }).toJSON());
  }
  if (Array.isArray(value)) return `[${value.map((item) => canonical(item) ?? 'null').join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const members: string[] = [];
    for (const key of Object.keys(value).sort()) {
      const member = canonical((value as Record<string, unknown>)[key]);
      if (member !== undefined) members.push(`${JSON.stringify(key)}:${member}`);
    }
    return `{${members.join(',')}}`;
  }
  return JSON.stringify(value);
}
