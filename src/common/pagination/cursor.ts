import { createHmac } from 'node:crypto';
import { constantTimeEqual } from 'src/common/crypto/crypto';

/**
 * Opaque list cursors: unpadded base64url of a JSON object that carries `v` (the version),
 * exactly the keys its list declares, and `c`, an HMAC of the rest and of the cursor's scope (the
 * list and the workspace it was issued for) under control's cursor key. Only the canonical
 * encoding of a well-typed object whose MAC verifies for the caller's scope is accepted, so forged,
 * edited or re-ordered cursors, and cursors of another list or workspace, are all rejected.
 */
export const CURSOR_VERSION = 2;
export const CURSOR_MAX_LENGTH = 2048;

export type CursorFieldType = 'string' | 'int' | 'timestamp';
export type CursorSchema = Record<string, CursorFieldType>;
export type CursorValue<S extends CursorSchema> = { [K in keyof S]: S[K] extends 'int' ? number : string };

const ALPHABET = /^[A-Za-z0-9_-]+$/;
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** The cursor keys, newest first: the first signs, each verifies (set once at boot, see useCursorKeys). */
let cursorKeys: Buffer[] = [];

/**
 * Installs the HMAC keys cursors are signed with: the first signs, every one verifies, so cursors
 * issued before a key rotation still page. Called once at boot by the control signing key service.
 */
export function useCursorKeys(keys: Buffer[]): void {
  if (keys.length === 0) throw new Error('at least one cursor key is required');
  cursorKeys = keys;
}

/** The `c` field: 32 hex characters (128 bits) of HMAC-SHA256 over the scope and the JSON of the other fields. */
export function cursorMac(key: Buffer, scope: string, json: string): string {
  return createHmac('sha256', key).update(`${scope}\n${json}`).digest('hex').slice(0, 32);
}

function signingKey(): Buffer {
  const key = cursorKeys[0];
  if (!key) throw new Error('cursor keys are not installed (useCursorKeys)');
  return key;
}

function unsigned<S extends CursorSchema>(schema: S, value: CursorValue<S>): string {
  const out: Record<string, unknown> = { v: CURSOR_VERSION };
  for (const key of Object.keys(schema)) out[key] = value[key];
  return JSON.stringify(out);
}

const withMac = (json: string, mac: string) => `${json.slice(0, -1)},"c":"${mac}"}`;

/** A cursor for `value` in `scope` (the list and the workspace, e.g. `audit:ws_1`), signed with the current key. */
export function encodeCursor<S extends CursorSchema>(schema: S, scope: string, value: CursorValue<S>): string {
  const json = unsigned(schema, value);
  return Buffer.from(withMac(json, cursorMac(signingKey(), scope, json)), 'utf8').toString('base64url');
}

/** Returns the decoded key set, or null for anything that is not a cursor this list issued in this scope. */
export function decodeCursor<S extends CursorSchema>(schema: S, scope: string, text: string, maxLength = CURSOR_MAX_LENGTH): CursorValue<S> | null {
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
  const { c: _mac, ...value } = record;
  const mac = record.c;
  // Canonical form only: re-encoding with the MAC it carries must give back the exact text.
  const json = unsigned(schema, value as CursorValue<S>);
  if (Buffer.from(withMac(json, mac), 'utf8').toString('base64url') !== text) return null;
  if (!cursorKeys.some((key) => constantTimeEqual(cursorMac(key, scope, json), mac))) return null;
  return value as CursorValue<S>;
}
