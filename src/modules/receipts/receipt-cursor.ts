import { decodeCursor, encodeCursor } from 'src/common/pagination/cursor';
import { parseRfc3339 } from 'src/common/time/time';

/** Where a receipts page starts: strictly after a (occurred_at, receipt_id) pair, or strictly before a time. */
export type ReceiptPosition = { kind: 'keyset'; at: Date; id: string } | { kind: 'time'; before: Date };

const V2 = { at: 'timestamp', id: 'string' } as const;
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

/** The cursor issued now for a workspace's receipts: `v2.` and the shared signed cursor over the full timestamp and receipt id. */
export function encodeReceiptCursor(workspaceId: string, at: Date, id: string): string {
  return `v2.${encodeCursor(V2, `receipts:${workspaceId}`, { at: at.toISOString(), id })}`;
}

/** `v1.` and unpadded base64url of `{timestamp}|{receipt_id}`: the earlier keyset format, still read. */
export function encodeV1ReceiptCursor(at: Date, id: string): string {
  return `v1.${Buffer.from(`${at.toISOString()}|${id}`, 'utf8').toString('base64url')}`;
}

/**
 * Reads a receipts `cursor`: `v2.` and `v1.` keyset cursors, anything else as a legacy RFC 3339
 * time cursor. Null for anything malformed (the caller answers 400, never substitutes now).
 */
export function decodeReceiptCursor(workspaceId: string, text: string): ReceiptPosition | null {
  if (text.startsWith('v2.')) {
    const value = decodeCursor(V2, `receipts:${workspaceId}`, text.slice(3));
    return value ? { kind: 'keyset', at: new Date(value.at), id: value.id } : null;
  }
  if (text.startsWith('v1.')) {
    const body = text.slice(3);
    if (!BASE64URL.test(body)) return null;
    const decoded = Buffer.from(body, 'base64url').toString('utf8');
    const separator = decoded.indexOf('|');
    const at = decoded.slice(0, separator);
    const id = decoded.slice(separator + 1);
    if (separator < 0 || !TIMESTAMP.test(at) || id.length === 0 || Number.isNaN(Date.parse(at))) return null;
    if (encodeV1ReceiptCursor(new Date(at), id) !== text) return null;
    return { kind: 'keyset', at: new Date(at), id };
  }
  return decodeTimeBound(text);
}

/** A legacy time bound (`before`, or a cursor without a version prefix). */
export function decodeTimeBound(text: string): ReceiptPosition | null {
  const before = parseRfc3339(text);
  return before ? { kind: 'time', before } : null;
}
