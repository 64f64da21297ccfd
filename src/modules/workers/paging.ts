import { queryError } from 'src/common/http/errors';
import { decodeCursor, encodeCursor } from 'src/common/pagination/cursor';
import { formatTimeRequired } from 'src/common/time/time';

const CURSOR = { at: 'timestamp', id: 'string' } as const;

/** The keyset position a list cursor names; 422 `invalid cursor` for anything this list (`scope`: list and workspace) did not issue. */
export function cursorPosition(scope: string, cursor: string | undefined): { at: Date; id: string } | null {
  if (cursor === undefined) return null;
  const value = decodeCursor(CURSOR, scope, cursor);
  if (!value) throw queryError('cursor', 'invalid cursor');
  return { at: new Date(value.at), id: value.id };
}

/** A listed row (an entity): its keyset position. */
type Positioned = { id: string; createdAt: Date };

/** The page (rows were read with `limit + 1`) and the cursor of the next one, or null on the last page. */
export function page<R extends Positioned>(scope: string, rows: R[], limit: number): { rows: R[]; next_cursor: string | null } {
  const kept = rows.slice(0, limit);
  const last = kept[kept.length - 1];
  if (rows.length <= limit || !last) return { rows: kept, next_cursor: null };
  return { rows: kept, next_cursor: encodeCursor(CURSOR, scope, { at: formatTimeRequired(last.createdAt), id: last.id }) };
}
