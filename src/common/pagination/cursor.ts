import { sha256Hex } from 'src/common/crypto/crypto';

/**
 * Opaque list cursors: unpadded base64url of a JSON object that carries `v` (the version),
 * exactly the keys its list declares, and `c`, a checksum of the rest. Only the canonical
 * encoding of a well-typed object with a matching checksum is accepted, so duplicate keys, extra
 * or missing keys, padding, re-orderings and edited values are all rejected.
 */
export const CURSOR_VERSION = 1;
export const CURSOR_MAX_LENGTH = 2048;

export type CursorFieldType = 'string' | 'int' | 'timestamp';
export type CursorSchema = Record<string, CursorFieldType>;
export type CursorValue<S extends CursorSchema> = { [K in keyof S]: S[K] extends 'int' ? number : string };

const ALPHABET = /^[A-Za-z0-9_-]+$/;
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function ordered<S extends CursorSchema>(schema: S, value: CursorValue<S>): Record<string, unknown> {
  const out: Record<string, unknown> = { v: CURSOR_VERSION };
  for (const key of Object.keys(schema)) out[key] = value[key];
  out.c = cursorChecksum(JSON.stringify(out));
  return out;
}

/** The `c` field: 16 hex characters of sha256 over the JSON of the other fields. */
export function cursorChecksum(json: string): string {
  return sha256Hex(json).slice(0, 16);
}

export function encodeCursor<S extends CursorSchema>(schema: S, value: CursorValue<S>): string {
  return Buffer.from(JSON.stringify(ordered(schema, value)), 'utf8').toString('base64url');
}

/** Returns the decoded key set, or null for anything that is not a cursor this list issued. */
export function decodeCursor<S extends CursorSchema>(schema: S, text: string, maxLength = CURSOR_MAX_LENGTH): CursorValue<S> | null {
  if (text.length === 0 || text.length > maxLength || !ALPHABET.test(text)) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return null;
  const record = parsed as Record<string, unknown>;
  if (record.v !== CURSOR_VERSION) return null;
  const keys = Object.keys(record);
  const expected = Object.keys(schema);
  if (keys.length !== expected.length + 2 || typeof record.c !== 'string') return null;
  for (const key of expected) {
    const value = record[key];
    switch (schema[key]) {
      case 'string':
        if (typeof value !== 'string' || value.length === 0) return null;
        break;
      case 'int':
        if (typeof value !== 'number' || !Number.isSafeInteger(value)) return null;
        break;
      case 'timestamp':
        if (typeof value !== 'string' || !TIMESTAMP.test(value) || Number.isNaN(Date.parse(value))) return null;
        break;
    }
  }
  const { c: _checksum, ...value } = record;
  // Canonical form with a matching checksum only: re-encoding must give back the exact text.
  if (encodeCursor(schema, value as CursorValue<S>) !== text) return null;
  return value as CursorValue<S>;
}
