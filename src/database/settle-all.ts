import { DataSource } from 'typeorm';

/**
 * Runs `settle` on every id a keyset query returns, page after page (so rows that keep failing
 * never starve the ones after them); returns how many settled. `selectIds` takes `$1` (the last id
 * seen) and `$2` (the page size) and must order by id. Up to `concurrency` settles of a page run at
 * once (each may hold a pooled connection: keep it well below the pool size).
 */
export async function settleAll(
  dataSource: DataSource,
  selectIds: string,
  settle: (id: string) => Promise<boolean>,
  pageSize = 100,
  concurrency = 1,
): Promise<number> {
  let settled = 0;
  let after = '';
  for (;;) {
    const rows: { id: string }[] = await dataSource.query(selectIds, [after, pageSize]);
    let next = 0;
    const worker = async () => {
      while (next < rows.length) if (await settle(rows[next++].id)) settled++;
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, rows.length) }, worker));
    if (rows.length < pageSize) return settled;
    after = rows[rows.length - 1].id;
  }
}
