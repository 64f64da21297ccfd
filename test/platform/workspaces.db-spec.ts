import { isUniqueViolation } from 'src/database/errors';
import { WorkspacesRepository } from 'src/platform/tenancy/workspaces.repository';
import { openRepositoryDatabase, RepositoryDatabase } from 'test/support/repository-database';
import { seedTenant } from 'test/platform/tenancy-seed';

describe('WorkspacesRepository', () => {
  let db: RepositoryDatabase;
  let repo: WorkspacesRepository;

  beforeAll(async () => {
    db = await openRepositoryDatabase();
    repo = new WorkspacesRepository(db.dataSource);
  });
  afterAll(() => db.close());

  it('inserts a workspace at version 1 and refuses a second slug in the organization with a unique violation', async () => {
    const tenant = await seedTenant(db.dataSource, 'stage');
    expect(await repo.header(db.dataSource.manager, tenant.workspaceId)).toEqual({ id: tenant.workspaceId, env: 'stage', snapshot_version: 1, published_version: 0 });
    const [{ slug }] = await db.dataSource.query(`SELECT slug FROM workspaces WHERE id = $1`, [tenant.workspaceId]);
    const error = await db.dataSource.transaction((m) => repo.insert(m, { id: 'ws_dup', orgId: tenant.orgId, slug, env: 'dev' })).catch((e: unknown) => e);
    expect(isUniqueViolation(error)).toBe(true);
    expect(await repo.organizationExists(tenant.orgId)).toBe(true);
    expect(await repo.organizationExists('org_missing')).toBe(false);
    expect(await repo.exists(tenant.workspaceId)).toBe(true);
    expect(await repo.exists('ws_missing')).toBe(false);
  });

  it('sets the frozen and assistant flags; false for a missing workspace', async () => {
    const tenant = await seedTenant(db.dataSource);
    expect(await repo.assistantEnabled(tenant.workspaceId)).toBe(false);
    expect(await repo.setFlag(tenant.workspaceId, 'assistant_enabled', true)).toBe(true);
    expect(await repo.assistantEnabled(tenant.workspaceId)).toBe(true);
    expect(await repo.setFlag(tenant.workspaceId, 'frozen', true)).toBe(true);
    expect(await db.dataSource.query(`SELECT frozen, assistant_enabled FROM workspaces WHERE id = $1`, [tenant.workspaceId])).toEqual([{ frozen: true, assistant_enabled: true }]);
    expect(await repo.setFlag('ws_missing', 'frozen', true)).toBe(false);
    expect(await repo.assistantEnabled('ws_missing')).toBe(false);
  });

  it('answers which ids exist and pages ids and versions in id order', async () => {
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await seedTenant(db.dataSource)).workspaceId);
    expect(await repo.existing([])).toEqual(new Set());
    expect(await repo.existing([...ids, 'ws_missing'])).toEqual(new Set(ids));
    const all = await repo.idsAfter('', 1000);
    expect(all).toEqual([...all].sort());
    expect(all).toEqual(expect.arrayContaining(ids));
    expect(await repo.idsAfter(all[0], 2)).toEqual(all.slice(1, 3));
    expect((await repo.versionsAfter('', 1000)).map((w) => w.id)).toEqual(all);
    expect((await repo.versionsAfter('', 1)).map((w) => w.snapshot_version)).toEqual([1]);
  });

  it('stages (increment and read back), raises published_version only forward, and pages the pending ones', async () => {
    const tenant = await seedTenant(db.dataSource);
    expect(await repo.pendingAfter('', 1000)).toContain(tenant.workspaceId);
    const pending = await repo.countPending();
    expect(await db.dataSource.transaction((m) => repo.stage(m, tenant.workspaceId))).toBe(2);
    expect(await repo.versions(tenant.workspaceId)).toEqual({ snapshot_version: 2, published_version: 0 });
    await repo.markPublished(tenant.workspaceId, 2);
    await repo.markPublished(tenant.workspaceId, 1);
    expect(await repo.versions(tenant.workspaceId)).toEqual({ snapshot_version: 2, published_version: 2 });
    expect(await repo.pendingAfter('', 1000)).not.toContain(tenant.workspaceId);
    expect(await repo.countPending()).toBe(pending - 1);
    expect(await repo.versions('ws_missing')).toBeUndefined();
    expect(await repo.header(db.dataSource.manager, 'ws_missing')).toBeUndefined();
  });

  it('locks the row (lock, lockVersion): a second locker waits for the first to commit', async () => {
    const tenant = await seedTenant(db.dataSource);
    const order: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const lockTaken = new Promise<void>((resolve) => (locked = resolve));
    const first = db.dataSource.transaction(async (m) => {
      await repo.lock(m, tenant.workspaceId);
      locked();
      await held;
      await repo.stage(m, tenant.workspaceId);
      order.push('first');
    });
    await lockTaken;
    const second = db.dataSource.transaction(async (m) => {
      const version = await repo.lockVersion(m, tenant.workspaceId);
      order.push(`second saw ${version}`);
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(order).toEqual([]);
    release();
    await Promise.all([first, second]);
    expect(order).toEqual(['first', 'second saw 2']);
    expect(await db.dataSource.transaction((m) => repo.lockVersion(m, 'ws_missing'))).toBeUndefined();
  });
});
