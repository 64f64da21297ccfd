import { DataSource } from 'typeorm';
import { eventually } from 'test/support/eventually';

/** A transaction on a connection of its own, left open to hold its locks until `end` commits it. */
export async function openTransaction(db: DataSource) {
  const runner = db.createQueryRunner();
  await runner.connect();
  await runner.startTransaction();
  return {
    query: (sql: string, params?: unknown[]) => runner.query(sql, params),
    end: () => runner.commitTransaction().finally(() => runner.release()),
  };
}

/** Polls until at least `count` backends of this database wait for a lock (a request queued behind one held). */
export async function lockWaiters(db: DataSource, count: number): Promise<void> {
  await eventually(async () => {
    const [{ waiting }] = await db.query(`SELECT count(*)::int AS waiting FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
    if (waiting < count) throw new Error(`${waiting} of ${count} lock waiters`);
  });
}
