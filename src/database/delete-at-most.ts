import { DataSource, EntityManager } from 'typeorm';

/**
 * Deletes at most `limit` rows of `table` matching `where` (its parameters `params`, numbered from
 * $1) in one statement, and returns how many went: one bounded step of a retention loop. Rows are
 * picked by `ctid`, so it serves tables whose rows have no key to match them back by (a unique
 * constraint over nullable columns) as well as any other.
 */
export async function deleteAtMost(db: DataSource | EntityManager, table: string, where: string, params: unknown[], limit: number): Promise<number> {
  const [{ n }]: { n: number }[] = await db.query(
    `WITH gone AS (
       DELETE FROM ${table} WHERE ctid = ANY(ARRAY(SELECT ctid FROM ${table} WHERE ${where} LIMIT $${params.length + 1})) RETURNING 1
     )
     SELECT count(*)::int AS n FROM gone`,
    [...params, limit],
  );
  return n;
}
