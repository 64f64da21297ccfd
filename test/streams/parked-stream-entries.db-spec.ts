import { ParkedStreamEntriesRepository } from 'src/modules/streams/parked-stream-entries.repository';
import { openRepositoryDatabase, RepositoryDatabase } from 'test/support/repository-database';

describe('ParkedStreamEntriesRepository', () => {
  let db: RepositoryDatabase;
  const repo = new ParkedStreamEntriesRepository();
  const rows = () => db.dataSource.query(`SELECT stream, entry_id, workspace_id, reason, data FROM stream_parked ORDER BY stream, entry_id`);

  beforeAll(async () => {
    db = await openRepositoryDatabase();
  });
  afterAll(() => db.close());

  it('parks a batch in one statement, keeps a redelivered entry once, and keeps streams apart', async () => {
    await db.dataSource.transaction((m) =>
      repo.park(m, 'usage', [
        { id: '1-0', workspaceId: 'ws_a', reason: 'data is not JSON', data: '{' },
        { id: '1-1', workspaceId: null, reason: 'missing data field', data: null },
      ]),
    );
    await db.dataSource.transaction((m) => repo.park(m, 'usage', [{ id: '1-0', workspaceId: 'ws_b', reason: 'other', data: 'x' }]));
    await db.dataSource.transaction((m) => repo.park(m, 'receipts', [{ id: '1-0', workspaceId: 'ws_a', reason: 'unknown workspace', data: null }]));
    expect(await rows()).toEqual([
      { stream: 'receipts', entry_id: '1-0', workspace_id: 'ws_a', reason: 'unknown workspace', data: null },
      { stream: 'usage', entry_id: '1-0', workspace_id: 'ws_a', reason: 'data is not JSON', data: '{' },
      { stream: 'usage', entry_id: '1-1', workspace_id: null, reason: 'missing data field', data: null },
    ]);
  });

  it('parks more entries than a VALUES list could bind (5 parameters a row past 65,535)', async () => {
    const many = Array.from({ length: 20_000 }, (_, i) => ({ id: `2-${i}`, workspaceId: 'ws_many', reason: 'r', data: null }));
    await db.dataSource.transaction((m) => repo.park(m, 'usage', many));
    expect(await db.dataSource.query(`SELECT count(*)::int AS n FROM stream_parked WHERE workspace_id = 'ws_many'`)).toEqual([{ n: 20_000 }]);
  });

  it('retention deletes only entries parked before the cutoff', async () => {
    await db.dataSource.query(`UPDATE stream_parked SET parked_at = '2020-01-01' WHERE workspace_id = 'ws_many'`);
    await repo.deleteParkedBefore(db.dataSource.manager, new Date('2021-01-01'));
    expect(await db.dataSource.query(`SELECT count(*)::int AS n FROM stream_parked`)).toEqual([{ n: 3 }]);
  });
});
