import { ReadModelPartitionsRepository } from 'src/modules/streams/read-model-partitions.repository';
import { openRepositoryDatabase, RepositoryDatabase } from 'test/support/repository-database';

describe('ReadModelPartitionsRepository', () => {
  let db: RepositoryDatabase;
  let repo: ReadModelPartitionsRepository;
  const attached = async (parent: string): Promise<string[]> =>
    (await db.dataSource.query(`SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = $1::regclass ORDER BY 1`, [parent])).map(
      (r: { name: string }) => r.name,
    );

  beforeAll(async () => {
    db = await openRepositoryDatabase();
    repo = new ReadModelPartitionsRepository(db.dataSource);
  });
  afterAll(() => db.close());

  it('creates a month partition once, however often it is asked', async () => {
    await repo.ensure('usage_events', new Date('2031-03-01T00:00:00Z'));
    await repo.ensure('usage_events', new Date('2031-03-01T00:00:00Z'));
    expect(await attached('usage_events')).toContain('usage_events_p203103');
  });

  it('lists the month tables of a parent (attached, pending or detached) and drops them', async () => {
    await repo.ensure('receipt_revisions', new Date('2031-01-01T00:00:00Z'));
    await repo.ensure('receipt_revisions', new Date('2031-02-01T00:00:00Z'));
    await db.dataSource.query(`ALTER TABLE receipt_revisions DETACH PARTITION receipt_revisions_p203102`);
    const tables = await repo.monthTables(db.dataSource.manager, 'receipt_revisions');
    expect(tables.filter((t) => t.name.startsWith('receipt_revisions_p2031'))).toEqual(
      expect.arrayContaining([
        { name: 'receipt_revisions_p203101', attached: true, pending: false },
        { name: 'receipt_revisions_p203102', attached: false, pending: false },
      ]),
    );
    expect(tables.every((t) => /^receipt_revisions_p\d{6}$/.test(t.name))).toBe(true);
    for (const table of tables.filter((t) => t.name.startsWith('receipt_revisions_p2031'))) {
      await repo.withMaintenanceSession(10_000, (session) => repo.drop(session, 'receipt_revisions', table));
    }
    const left = await repo.monthTables(db.dataSource.manager, 'receipt_revisions');
    expect(left.map((t) => t.name)).not.toEqual(expect.arrayContaining(['receipt_revisions_p203101']));
    expect(left.map((t) => t.name)).not.toContain('receipt_revisions_p203102');
  });

  it('runs one maintenance session at a time: null, and the work not run, while another holds the lock', async () => {
    const holder = db.dataSource.createQueryRunner();
    await holder.connect();
    try {
      await holder.query(`SELECT pg_advisory_lock(hashtext('read_model_maintenance'))`);
      const work = jest.fn(async () => 'ran');
      expect(await repo.withMaintenanceSession(10_000, work)).toBeNull();
      expect(work).not.toHaveBeenCalled();
      await holder.query(`SELECT pg_advisory_unlock(hashtext('read_model_maintenance'))`);
      expect(await repo.withMaintenanceSession(10_000, work)).toBe('ran');
    } finally {
      await holder.release();
    }
  });

  it('gives the session its statement bound, resets it after, and runs retention transactions without waiting for the flush', async () => {
    const seen = await repo.withMaintenanceSession(12_345, async (session) => {
      const [{ statement_timeout }] = await session.query(`SHOW statement_timeout`);
      const [{ synchronous_commit }] = await repo.retentionTransaction(session, (m) => m.query(`SHOW synchronous_commit`));
      const [after] = await session.query(`SHOW synchronous_commit`);
      return { statement_timeout, synchronous_commit, after: after.synchronous_commit };
    });
    expect(seen).toEqual({ statement_timeout: '12345ms', synchronous_commit: 'off', after: 'on' });
  });
});
