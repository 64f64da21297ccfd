import { DataSource } from 'typeorm';
import { QualifiersRepository, QualifierValues } from 'src/modules/routing/qualifiers.repository';
import { openRepositoryDatabase, RepositoryDatabase } from 'test/support/repository-database';

describe('QualifiersRepository', () => {
  let db: RepositoryDatabase;
  let ds: DataSource;
  let repo: QualifiersRepository;

  async function workspace(id: string): Promise<string> {
    await ds.query(`INSERT INTO organizations (id) VALUES ($1)`, [`org_${id}`]);
    await ds.query(`INSERT INTO workspaces (id, org_id, slug, env) VALUES ($1, $2, $1, 'dev')`, [id, `org_${id}`]);
    return id;
  }
  const values = (over: Partial<QualifierValues> = {}): QualifierValues => ({
    capabilityId: null,
    onlyTargets: null,
    ignoreTargets: null,
    pinTarget: null,
    preferAuth: [],
    preferSurface: [],
    preferSources: [],
    minQuality: 0,
    maxCost: null,
    allowFallbacks: false,
    ...over,
  });

  beforeAll(async () => {
    db = await openRepositoryDatabase();
    ds = db.dataSource;
    repo = new QualifiersRepository(ds);
  });
  afterAll(() => db.close());

  it('lists nothing, counts 0 and locks nothing in an empty workspace', async () => {
    const ws = await workspace('ws_empty');
    expect(await repo.list(undefined, ws)).toEqual([]);
    expect(await ds.transaction((m) => repo.count(m, ws))).toBe(0);
    expect(await ds.transaction((m) => repo.lock(m, ws, 'a'))).toBeNull();
  });

  it('inserts, lists by qualifier id (C collation), updates, counts and deletes', async () => {
    const ws = await workspace('ws_a');
    for (const id of ['b', 'a_1', 'a-1', '0', 'a']) await ds.transaction((m) => repo.insert(m, ws, id, values()));
    expect((await repo.list(undefined, ws)).map((q) => q.qualifierId)).toEqual(['0', 'a', 'a-1', 'a_1', 'b']);
    const written = await ds.transaction((m) => repo.insert(m, ws, 'pin', values({ pinTarget: 't', maxCost: '12', preferAuth: ['oauth'] })));
    expect(written).toMatchObject({ workspaceId: ws, qualifierId: 'pin', revision: 1, pinTarget: 't', maxCost: '12' });
    const [stored] = (await repo.list(undefined, ws)).filter((q) => q.qualifierId === 'pin');
    expect(stored).toMatchObject({ revision: 1, pinTarget: 't', maxCost: '12', preferAuth: ['oauth'], allowFallbacks: false });

    await ds.transaction((m) => repo.update(m, ws, 'pin', 2, values({ onlyTargets: ['x'] })));
    const locked = await ds.transaction((m) => repo.lock(m, ws, 'pin'));
    expect(locked).toMatchObject({ revision: 2, onlyTargets: ['x'], pinTarget: null, maxCost: null });
    expect(locked!.updatedAt.getTime()).toBeGreaterThanOrEqual(stored.updatedAt.getTime());
    expect(await ds.transaction((m) => repo.count(m, ws))).toBe(6);

    await ds.transaction((m) => repo.delete(m, ws, 'pin'));
    expect(await ds.transaction((m) => repo.lock(m, ws, 'pin'))).toBeNull();
    expect(await ds.transaction((m) => repo.count(m, ws))).toBe(5);
    expect(await repo.list(undefined, 'ws_empty')).toEqual([]);
  });

  it('refuses a second qualifier with the same id', async () => {
    const ws = await workspace('ws_b');
    await ds.transaction((m) => repo.insert(m, ws, 'a', values()));
    await expect(ds.transaction((m) => repo.insert(m, ws, 'a', values()))).rejects.toThrow(/duplicate key/);
  });

  it('locks the qualifier row FOR UPDATE until the transaction ends', async () => {
    const ws = await workspace('ws_lock');
    await ds.transaction((m) => repo.insert(m, ws, 'a', values()));
    const runner = ds.createQueryRunner();
    await runner.connect();
    await runner.startTransaction();
    try {
      await repo.lock(runner.manager, ws, 'a');
      const other = ds.transaction(async (m) => {
        await m.query(`SET LOCAL lock_timeout = '200ms'`);
        return repo.lock(m, ws, 'a');
      });
      await expect(other).rejects.toThrow(/lock timeout/);
    } finally {
      await runner.rollbackTransaction();
      await runner.release();
    }
  });
});
