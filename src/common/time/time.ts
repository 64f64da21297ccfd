import { queryError } from 'src/common/http/errors';

/** RFC 3339 UTC with a `Z` suffix and millisecond precision. */
export function formatTime(value: Date | string | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  const date = value instanceof Date ? value : new Date(value);
  return date.toISOString();
}

/** formatTime for a value that is never null. */
export function formatTimeRequired(value: Date | string): string {
  return (value instanceof Date ? value : new Date(value)).toISOString();
}

/** formatTimeRequired in SQL, over a `timestamptz` expression kept to the millisecond. */
export const formatTimeSql = (at: string): string => `to_char(${at} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** The number written by `count` ASCII digits of `text` from `at`, or -1 if one is not a digit. */
function digitsAt(text: string, at: number, count: number): number {
  let value = 0;
  for (let i = at; i < at + count; i++) {
    const d = text.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return -1;
    value = value * 10 + d;
  }
  return value;
}

/**
 * Parses an RFC 3339 timestamp in UTC (`Z` or a zero offset; fraction of 1-9 digits, truncated
 * to milliseconds); null when it is not one. Reads character codes rather than running a regular
 * expression: the stream consumer parses one or two of these per entry.
 */
export function parseUtcTimestamp(text: string): Date | null {
  const n = text.length;
  if (n < 20 || text.charCodeAt(4) !== 45 || text.charCodeAt(7) !== 45 || (text.charCodeAt(10) | 0x20) !== 0x74 || text.charCodeAt(13) !== 58 || text.charCodeAt(16) !== 58) {
    return null;
  }
  const y = digitsAt(text, 0, 4);
  const mo = digitsAt(text, 5, 2);
  const d = digitsAt(text, 8, 2);
  const h = digitsAt(text, 11, 2);
  const mi = digitsAt(text, 14, 2);
  const s = digitsAt(text, 17, 2);
  if (y < 0 || mo < 0 || d < 0 || h < 0 || h > 23 || mi < 0 || mi > 59 || s < 0 || s > 59) return null;
  let i = 19;
  let ms = 0;
  if (text.charCodeAt(i) === 46) {
    const start = ++i;
    for (let digit = text.charCodeAt(i) - 48; digit >= 0 && digit <= 9; digit = text.charCodeAt(++i) - 48) if (i - start < 3) ms = ms * 10 + digit;
    if (i === start || i - start > 9) return null;
    for (let k = i - start; k < 3; k++) ms *= 10;
  }
  const zone = n - i === 1 ? (text.charCodeAt(i) | 0x20) === 0x7a : n - i === 6 && (text[i] === '+' || text[i] === '-') && text.endsWith('00:00');
  if (!zone) return null;
  const date = new Date(Date.UTC(y, mo - 1, d, h, mi, s, ms));
  return date.getUTCFullYear() === y && date.getUTCMonth() === mo - 1 && date.getUTCDate() === d ? date : null;
}

const RFC3339_ANY = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;

/** Parses an RFC 3339 timestamp with any explicit offset (request bodies such as `expires_at`). */
export function parseRfc3339(text: string): Date | null {
  if (!RFC3339_ANY.test(text)) return null;
  const date = new Date(text);
  return Number.isNaN(date.getTime()) ? null : date;
}

export const MINUTE_MS = 60_000;
export const HOUR_MS = 3_600_000;

/** The start of the `unitMs`-long UTC bucket holding `at` (minutes and hours: epoch time has no leap seconds). */
export const floorTo = (at: Date, unitMs: number) => new Date(Math.floor(at.getTime() / unitMs) * unitMs);
/** `at` itself on a bucket boundary, else the start of the next `unitMs`-long bucket. */
export const ceilTo = (at: Date, unitMs: number) => new Date(Math.ceil(at.getTime() / unitMs) * unitMs);

export interface TimeWindow {
  from: Date;
  to: Date;
}

export type WindowResult = { ok: true; window: TimeWindow | null } | { ok: false; reason: 'unpaired' | 'invalid'; field: 'from' | 'to' };

export const WINDOW_PARAM_MAX = 64;

/**
 * The half-open window `[from, to)`: both or neither, each at most 64 characters, UTC RFC 3339,
 * `from` strictly before `to`.
 */
export function parseWindow(from: string | undefined, to: string | undefined): WindowResult {
  if (from === undefined && to === undefined) return { ok: true, window: null };
  if (from === undefined || to === undefined) return { ok: false, reason: 'unpaired', field: from === undefined ? 'from' : 'to' };
  const f = from.length <= WINDOW_PARAM_MAX ? parseUtcTimestamp(from) : null;
  if (!f) return { ok: false, reason: 'invalid', field: 'from' };
  const t = to.length <= WINDOW_PARAM_MAX ? parseUtcTimestamp(to) : null;
  if (!t) return { ok: false, reason: 'invalid', field: 'to' };
  if (f.getTime() >= t.getTime()) return { ok: false, reason: 'invalid', field: 'from' };
  return { ok: true, window: { from: f, to: t } };
}

/**
 * The window of a request's `from`/`to` (a list query's by default): 422 `invalid UTC window` or
 * `from and to must be provided together` in the field-shaped detail `refuse` builds.
 */
export function requestWindow(from: string | undefined, to: string | undefined, refuse: (field: string, msg: string) => Error = queryError): TimeWindow | null {
  const result = parseWindow(from, to);
  if (result.ok) return result.window;
  throw refuse(result.field, result.reason === 'unpaired' ? 'from and to must be provided together' : 'invalid UTC window');
}
