import { DataSource } from 'typeorm';
import { inLanes } from 'src/common/async/lanes';

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
    await inLanes(rows.length, concurrency, async (i) => {
      if (await settle(rows[i].id)) settled++;
    });
    if (rows.length < pageSize) return settled;
    after = rows[rows.length - 1].id;
  }
}
