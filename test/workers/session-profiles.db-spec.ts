import { DataSource } from 'typeorm';
import { SessionProfilesRepository } from 'src/modules/workers/runs/session-profiles.repository';
import { openRepositoryDatabase, RepositoryDatabase } from 'test/support/repository-database';

describe('SessionProfilesRepository', () => {
  let db: RepositoryDatabase;
  let ds: DataSource;
  let repo: SessionProfilesRepository;

  async function workspace(id: string): Promise<string> {
    await ds.query(`INSERT INTO organizations (id) VALUES ($1)`, [`org_${id}`]);
    await ds.query(`INSERT INTO workspaces (id, org_id, slug, env) VALUES ($1, $2, $1, 'dev')`, [id, `org_${id}`]);
    return id;
  }
  const profile = (ws: string, id: string, name: string) => ({
    id,
    workspaceId: ws,
    name,
    environmentClass: 'browser',
    description: null,
    status: 'active' as const,
    createdByUserId: 'usr_1',
  });

  beforeAll(async () => {
    db = await openRepositoryDatabase();
    ds = db.dataSource;
    repo = new SessionProfilesRepository(ds);
  });
  afterAll(() => db.close());

  it('inserts and reads back the stored row; an active name is taken once', async () => {
    const ws = await workspace('ws_sp');
    const row = await ds.transaction((m) => repo.insert(m, profile(ws, 'wsp_1', 'signed-in')));
    expect(row).toMatchObject({ id: 'wsp_1', workspaceId: ws, status: 'active', revokedAt: null, createdAt: expect.any(Date) });
    expect(await repo.find(ws, 'wsp_1')).toEqual(row);
    expect(await repo.find('ws_other', 'wsp_1')).toBeNull();
    await expect(ds.transaction((m) => repo.insert(m, profile(ws, 'wsp_2', 'signed-in')))).rejects.toMatchObject({ code: '23505' });
  });

  it('revokes once (the first revocation time stays), then the name is free again', async () => {
    const ws = await workspace('ws_rv');
    await ds.transaction((m) => repo.insert(m, profile(ws, 'wsp_r', 'browser')));
    const first = await ds.transaction((m) => repo.revoke(m, ws, 'wsp_r'));
    expect(first).toMatchObject({ status: 'revoked', revokedAt: expect.any(Date) });
    const again = await ds.transaction((m) => repo.revoke(m, ws, 'wsp_r'));
    expect(again!.revokedAt).toEqual(first!.revokedAt);
    expect(await ds.transaction((m) => repo.revoke(m, ws, 'wsp_missing'))).toBeNull();
    expect(await ds.transaction((m) => repo.findActive(m, ws, 'wsp_r'))).toBeNull();
    await ds.transaction((m) => repo.insert(m, profile(ws, 'wsp_r2', 'browser')));
    expect(await ds.transaction((m) => repo.findActive(m, ws, 'wsp_r2'))).toMatchObject({ id: 'wsp_r2' });
    expect(await ds.transaction((m) => repo.activeIds(m, ws, ['wsp_r', 'wsp_r2', 'wsp_none']))).toEqual(new Set(['wsp_r2']));
    expect(await ds.transaction((m) => repo.activeIds(m, ws, []))).toEqual(new Set());
  });

  it('pages in (created_at, id) order after a position', async () => {
    const ws = await workspace('ws_pg');
    for (const id of ['wsp_a', 'wsp_b', 'wsp_c']) await ds.transaction((m) => repo.insert(m, profile(ws, id, id)));
    const all = await repo.page(ws, null, 10);
    expect(all.map((r) => r.id)).toEqual(['wsp_a', 'wsp_b', 'wsp_c']);
    expect((await repo.page(ws, null, 1)).map((r) => r.id)).toEqual(['wsp_a', 'wsp_b']);
    expect((await repo.page(ws, { at: all[0].createdAt, id: all[0].id }, 10)).map((r) => r.id)).toEqual(['wsp_b', 'wsp_c']);
    expect(await repo.page('ws_none', null, 10)).toEqual([]);
  });
});
