import { queryError } from 'src/common/http/errors';
import { decodeCursor, encodeCursor } from 'src/common/pagination/cursor';
import { formatTimeRequired } from 'src/common/time/time';

const CURSOR = { at: 'timestamp', id: 'string' } as const;

/** The keyset position a list cursor names; 422 `invalid cursor` for anything this list did not issue. */
export function cursorPosition(cursor: string | undefined): { at: Date; id: string } | null {
  if (cursor === undefined) return null;
  const value = decodeCursor(CURSOR, cursor);
  if (!value) throw queryError('cursor', 'invalid cursor');
  return { at: new Date(value.at), id: value.id };
}

/** The page (rows were read with `limit + 1`) and the cursor of the next one, or null on the last page. */
export function page<R extends { id: string; created_at: Date }>(rows: R[], limit: number): { rows: R[]; next_cursor: string | null } {
  const kept = rows.slice(0, limit);
  const last = kept[kept.length - 1];
  return { rows: kept, next_cursor: rows.length > limit && last ? encodeCursor(CURSOR, { at: formatTimeRequired(last.created_at), id: last.id }) : null };
}
