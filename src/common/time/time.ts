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

const RFC3339_UTC = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-]00:00)$/;

/** Parses an RFC 3339 timestamp in UTC (`Z` or a zero offset); null when it is not one. */
export function parseUtcTimestamp(text: string): Date | null {
  const m = RFC3339_UTC.exec(text);
  if (!m) return null;
  const [, y, mo, d, h, mi, s] = m.map(Number) as number[];
  const ms = m[7] ? Math.floor(Number(`0${m[7]}`) * 1000) : 0;
  const date = new Date(Date.UTC(y, mo - 1, d, h, mi, s, ms));
  if (date.getUTCFullYear() !== y || date.getUTCMonth() !== mo - 1 || date.getUTCDate() !== d || h > 23 || mi > 59 || s > 59) {
    return null;
  }
  return date;
}

const RFC3339_ANY = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;

/** Parses an RFC 3339 timestamp with any explicit offset (request bodies such as `expires_at`). */
export function parseRfc3339(text: string): Date | null {
  if (!RFC3339_ANY.test(text)) return null;
  const date = new Date(text);
  return Number.isNaN(date.getTime()) ? null : date;
}

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

/** The window of a list query: 422 `invalid UTC window` (or a missing/unpaired field) in the field-shaped detail. */
export function windowFromQuery(from: string | undefined, to: string | undefined): TimeWindow | null {
  const result = parseWindow(from, to);
  if (result.ok) return result.window;
  const msg = result.reason === 'unpaired' ? 'from and to must be provided together' : 'invalid UTC window';
  throw queryError(result.field, msg);
}
