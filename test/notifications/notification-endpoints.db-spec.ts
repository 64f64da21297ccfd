import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { NotificationEndpoint } from 'src/modules/notifications/entities/notification-endpoint.entity';
import { NotificationEndpointsRepository } from 'src/modules/notifications/notification-endpoints.repository';
import { openRepositoryDatabase, RepositoryDatabase } from 'test/support/repository-database';
import { Transactions } from 'src/database/transactions';

describe('NotificationEndpointsRepository', () => {
  let db: RepositoryDatabase;
  let ds: DataSource;
  let repo: NotificationEndpointsRepository;
  let ws: string;

  /** The organization and workspace `notification_endpoints.workspace_id` references (tenancy's tables, written by hand here). */
  const seedWorkspace = async (): Promise<string> => {
    const suffix = randomBytes(6).toString('hex');
    await ds.query(`INSERT INTO organizations (id) VALUES ($1)`, [`org_${suffix}`]);
    await ds.query(`INSERT INTO workspaces (id, org_id, slug, env) VALUES ($1, $2, $1, 'dev')`, [`ws_${suffix}`, `org_${suffix}`]);
    return `ws_${suffix}`;
  };
  const row = (id: string, over: Partial<NotificationEndpoint> = {}): Omit<NotificationEndpoint, 'createdAt' | 'updatedAt'> => ({
    id,
    workspaceId: ws,
    url: `https://hooks.example.com/${id}`,
    eventTypes: ['approval.*'],
    format: 'standard',
    description: null,
    enabled: true,
    disabledReason: null,
    revision: 1,
    secret: 'whsec_c2VjcmV0',
    previousSecret: null,
    previousSecretUntil: null,
    secretRotatedAt: null,
    failingSince: null,
    ...over,
  });
  const insert = (id: string, over: Partial<NotificationEndpoint> = {}) => repo.insert(ds.manager, row(id, over));

  beforeAll(async () => {
    db = await openRepositoryDatabase();
    ds = db.dataSource;
    repo = new NotificationEndpointsRepository(ds);
  });
  beforeEach(async () => {
    ws = await seedWorkspace();
  });
  afterAll(() => db.close());

  it('inserts and reads the row back with the database defaults (created_at, updated_at)', async () => {
    const before = Date.now();
    const created = await insert('nep_ins', { eventTypes: ['*', 'audit.event'], format: 'slack', description: 'ops' });
    expect(created).toBeInstanceOf(NotificationEndpoint);
    expect(created).toMatchObject({ ...row('nep_ins', { eventTypes: ['*', 'audit.event'], format: 'slack', description: 'ops' }) });
    expect(created.createdAt.getTime()).toBeGreaterThanOrEqual(before - 1000);
    expect(created.updatedAt.getTime()).toBe(created.createdAt.getTime());
    await expect(insert('nep_ins')).rejects.toThrow(/duplicate key/);
  });

  it('lists a workspace oldest first, ties by id, and nothing of another workspace', async () => {
    await insert('nep_c');
    await insert('nep_b');
    await insert('nep_a');
    await ds.query(`UPDATE notification_endpoints SET created_at = '2026-01-01T00:00:00Z' WHERE id = 'nep_c'`);
    await ds.query(`UPDATE notification_endpoints SET created_at = '2026-01-02T00:00:00Z' WHERE id IN ('nep_a', 'nep_b')`);
    const other = ws;
    ws = await seedWorkspace();
    await insert('nep_other');
    expect((await repo.list(other)).map((e) => e.id)).toEqual(['nep_c', 'nep_a', 'nep_b']);
    expect((await repo.list(ws)).map((e) => e.id)).toEqual(['nep_other']);
    expect(await repo.list(await seedWorkspace())).toEqual([]);
  });

  it('finds by workspace and id only; a locked find holds the row until the transaction ends', async () => {
    await insert('nep_find');
    expect((await repo.find(ws, 'nep_find'))?.url).toBe('https://hooks.example.com/nep_find');
    expect(await repo.find(await seedWorkspace(), 'nep_find')).toBeNull();
    expect(await repo.find(ws, 'nep_missing')).toBeNull();

    const tryLock = () => ds.query(`SELECT 1 FROM notification_endpoints WHERE id = 'nep_find' FOR UPDATE NOWAIT`);
    await ds.transaction(async (manager) => {
      expect((await repo.find(ws, 'nep_find', manager, true))?.id).toBe('nep_find');
      await expect(tryLock()).rejects.toThrow(/could not obtain lock/);
    });
    await expect(tryLock()).resolves.toHaveLength(1);
    // Without the lock flag, the read takes no row lock.
    await ds.transaction(async (manager) => {
      await repo.find(ws, 'nep_find', manager);
      await expect(tryLock()).resolves.toHaveLength(1);
    });
  });

  it('counts the endpoints of a workspace', async () => {
    expect(await repo.count(ds.manager, ws)).toBe(0);
    await insert('nep_n1');
    await insert('nep_n2', { enabled: false, disabledReason: 'operator' });
    expect(await repo.count(ds.manager, ws)).toBe(2);
    expect(await repo.count(ds.manager, await seedWorkspace())).toBe(0);
  });

  it('updates the given columns and moves updated_at on the database clock', async () => {
    const created = await insert('nep_upd');
    const updated = await repo.update(ds.manager, ws, 'nep_upd', { url: 'https://new.example.com/', revision: 2, eventTypes: ['*'] });
    expect(updated).toMatchObject({ id: 'nep_upd', url: 'https://new.example.com/', revision: 2, eventTypes: ['*'], secret: created.secret });
    expect(updated.createdAt).toEqual(created.createdAt);
    expect(updated.updatedAt.getTime()).toBeGreaterThanOrEqual(created.updatedAt.getTime());
    // Another workspace's id matches nothing: the read back fails.
    await expect(repo.update(ds.manager, await seedWorkspace(), 'nep_upd', { url: 'https://x.example.com/' })).rejects.toThrow();
    expect((await repo.find(ws, 'nep_upd'))?.url).toBe('https://new.example.com/');
  });

  it('deletes within the workspace only, answering whether a row went', async () => {
    await insert('nep_del');
    expect(await repo.delete(ds.manager, await seedWorkspace(), 'nep_del')).toBe(false);
    expect(await repo.delete(ds.manager, ws, 'nep_del')).toBe(true);
    expect(await repo.delete(ds.manager, ws, 'nep_del')).toBe(false);
    expect(await repo.find(ws, 'nep_del')).toBeNull();
  });

  it('disables an enabled endpoint once: reason, revision + 1; a second call (or an operator-disabled one) answers null', async () => {
    const created = await insert('nep_dis', { revision: 3 });
    const disabled = await repo.disable(ds.manager, 'nep_dis', 'gone');
    expect(disabled).toMatchObject({ id: 'nep_dis', enabled: false, disabledReason: 'gone', revision: 4 });
    expect(disabled!.updatedAt.getTime()).toBeGreaterThanOrEqual(created.updatedAt.getTime());
    expect(await repo.disable(ds.manager, 'nep_dis', 'failing')).toBeNull();
    expect(await repo.find(ws, 'nep_dis')).toMatchObject({ disabledReason: 'gone', revision: 4 });

    await insert('nep_op', { enabled: false, disabledReason: 'operator' });
    expect(await repo.disable(ds.manager, 'nep_op', 'failing')).toBeNull();
    expect(await repo.find(ws, 'nep_op')).toMatchObject({ disabledReason: 'operator', revision: 1 });
    expect(await repo.disable(ds.manager, 'nep_missing', 'failing')).toBeNull();
  });

  it('writes through a Transactions manager: a failure rolls its writes back, after-commit work sees them', async () => {
    await expect(
      new Transactions(ds).run(async (tx) => {
        await repo.insert(tx.manager, row('nep_tx'));
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(await repo.find(ws, 'nep_tx')).toBeNull();
    const after: string[] = [];
    await new Transactions(ds).run(async (tx) => {
      await repo.disable(tx.manager, (await repo.insert(tx.manager, row('nep_tx2'))).id, 'failing');
      tx.afterCommit(async () => {
        after.push((await repo.find(ws, 'nep_tx2'))!.disabledReason!);
      });
    });
    expect(after).toEqual(['failing']);
  });
});
