import { WorkspaceAccessRepository } from 'src/platform/tenancy/workspace-access.repository';
import { MembershipsRepository } from 'src/platform/tenancy/memberships.repository';
import { WorkspacesRepository } from 'src/platform/tenancy/workspaces.repository';
import { openRepositoryDatabase, RepositoryDatabase } from 'test/support/repository-database';
import { seedMember, seedTenant, seedUser } from 'test/platform/tenancy-seed';

describe('WorkspaceAccessRepository', () => {
  let db: RepositoryDatabase;
  let repo: WorkspaceAccessRepository;

  beforeAll(async () => {
    db = await openRepositoryDatabase();
    repo = new WorkspaceAccessRepository(db.dataSource);
  });
  afterAll(() => db.close());

  it('reads the workspace with the caller role in one named statement; undefined for a stranger or a missing workspace', async () => {
    const tenant = await seedTenant(db.dataSource, 'prod');
    const row = await repo.read(tenant.workspaceId, tenant.userId);
    expect(row).toMatchObject({ id: tenant.workspaceId, org_id: tenant.orgId, env: 'prod', frozen: false, snapshot_version: 1, published_version: 0, role: 'owner' });
    expect(row!.created_at).toBeInstanceOf(Date);
    expect(await repo.read(tenant.workspaceId, await seedUser(db.dataSource))).toBeUndefined();
    expect(await repo.read('ws_missing', tenant.userId)).toBeUndefined();
    // Prepared once per connection: the same name serves every later call.
    for (let i = 0; i < 5; i++) expect((await repo.read(tenant.workspaceId, tenant.userId))?.role).toBe('owner');
  });

  it('locks the row and re-reads under the lock: a change committed while waiting is what it returns', async () => {
    const tenant = await seedTenant(db.dataSource);
    const viewer = await seedMember(db.dataSource, tenant.workspaceId, 'viewer');
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const lockTaken = new Promise<void>((resolve) => (locked = resolve));
    const holder = db.dataSource.transaction(async (m) => {
      await repo.lockAndRead(m, tenant.workspaceId, viewer);
      locked();
      await held;
      await new MembershipsRepository(db.dataSource).setRole(m, tenant.workspaceId, viewer, 'admin');
    });
    await lockTaken;
    const waiter = db.dataSource.transaction((m) => repo.lockAndRead(m, tenant.workspaceId, viewer));
    await new Promise((resolve) => setTimeout(resolve, 100));
    release();
    await holder;
    expect((await waiter)?.role).toBe('admin');
    expect(await db.dataSource.transaction((m) => repo.lockAndRead(m, 'ws_missing', viewer))).toBeUndefined();
  });

  it('sees the frozen flag the workspaces repository sets', async () => {
    const tenant = await seedTenant(db.dataSource);
    expect(await new WorkspacesRepository(db.dataSource).setFlag(tenant.workspaceId, 'frozen', true)).toBe(true);
    expect((await repo.read(tenant.workspaceId, tenant.userId))?.frozen).toBe(true);
  });
});
