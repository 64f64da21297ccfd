import { MembershipsRepository } from 'src/platform/tenancy/memberships.repository';
import { WorkspacesRepository } from 'src/platform/tenancy/workspaces.repository';
import { openRepositoryDatabase, RepositoryDatabase } from 'test/support/repository-database';
import { seedMember, seedTenant, seedUser } from 'test/platform/tenancy-seed';

describe('MembershipsRepository', () => {
  let db: RepositoryDatabase;
  let repo: MembershipsRepository;

  beforeAll(async () => {
    db = await openRepositoryDatabase();
    repo = new MembershipsRepository(db.dataSource);
  });
  afterAll(() => db.close());

  it('reads organization membership (FOR SHARE) and grants it once (ON CONFLICT DO NOTHING)', async () => {
    const tenant = await seedTenant(db.dataSource);
    const other = await seedUser(db.dataSource);
    expect(await db.dataSource.transaction((m) => repo.organizationMember(m, tenant.orgId, tenant.userId))).toBe(true);
    expect(await db.dataSource.transaction((m) => repo.organizationMember(m, tenant.orgId, other))).toBe(false);
    await repo.grantOrganization(tenant.orgId, other);
    await repo.grantOrganization(tenant.orgId, other);
    expect(await db.dataSource.transaction((m) => repo.organizationMember(m, tenant.orgId, other))).toBe(true);
  });

  it("lists a user's workspaces with the role: by creation (optionally one organization's) and by membership", async () => {
    const a = await seedTenant(db.dataSource);
    const b = await seedTenant(db.dataSource);
    await seedMember(db.dataSource, a.workspaceId, 'viewer', b.userId);
    const mine = await repo.membershipsOf(b.userId);
    expect(mine.map((r) => [r.id, r.role])).toEqual([
      [b.workspaceId, 'owner'],
      [a.workspaceId, 'viewer'],
    ]);
    expect(mine[0]).toEqual({ id: b.workspaceId, org_id: b.orgId, slug: expect.any(String), env: 'dev', frozen: false, snapshot_version: 1, role: 'owner' });
    expect((await repo.workspacesOf(b.userId)).map((r) => r.id)).toEqual([a.workspaceId, b.workspaceId]);
    expect((await repo.workspacesOf(b.userId, a.orgId)).map((r) => r.id)).toEqual([a.workspaceId]);
    expect(await repo.workspacesOf(await seedUser(db.dataSource))).toEqual([]);
    expect(await db.dataSource.transaction((m) => repo.hasWorkspace(m, b.userId))).toBe(true);
  });

  it('adds, reads (locked), changes and removes members, and knows whether another owner remains', async () => {
    const tenant = await seedTenant(db.dataSource);
    const dev = await seedMember(db.dataSource, tenant.workspaceId, 'developer');
    const members = await repo.members(tenant.workspaceId);
    expect(members.map((r) => [r.user_id, r.role])).toEqual([
      [tenant.userId, 'owner'],
      [dev, 'developer'],
    ]);
    await db.dataSource.transaction(async (m) => {
      expect(await repo.lockedRole(m, tenant.workspaceId, dev)).toBe('developer');
      expect(await repo.lockedRole(m, tenant.workspaceId, 'usr_missing')).toBeUndefined();
      expect(await repo.hasAnotherOwner(m, tenant.workspaceId, tenant.userId)).toBe(false);
      await repo.setRole(m, tenant.workspaceId, dev, 'owner');
      expect(await repo.hasAnotherOwner(m, tenant.workspaceId, tenant.userId)).toBe(true);
      expect(await repo.member(m, tenant.workspaceId, dev)).toMatchObject({ user_id: dev, role: 'owner' });
      expect(await repo.memberIds(m, tenant.workspaceId, [dev, 'usr_missing'])).toEqual(new Set([dev]));
      expect(await repo.memberIds(m, tenant.workspaceId, [])).toEqual(new Set());
    });
    expect(await repo.oldestOwner(tenant.workspaceId)).toBe(tenant.userId);
    await db.dataSource.transaction((m) => repo.deleteMember(m, tenant.workspaceId, tenant.userId));
    expect(await repo.oldestOwner(tenant.workspaceId)).toBe(dev);
    expect(await repo.oldestOwner('ws_missing')).toBeUndefined();
    expect(await db.dataSource.transaction((m) => repo.member(m, tenant.workspaceId, tenant.userId))).toBeUndefined();
  });

  it("reads a member's role with the workspace's frozen flag; undefined for a non-member", async () => {
    const tenant = await seedTenant(db.dataSource);
    await new WorkspacesRepository(db.dataSource).setFlag(tenant.workspaceId, 'frozen', true);
    expect(await repo.roleAndFrozen(tenant.workspaceId, tenant.userId)).toEqual({ role: 'owner', frozen: true });
    expect(await repo.roleAndFrozen(tenant.workspaceId, await seedUser(db.dataSource))).toBeUndefined();
  });

  it("serializes one user's provisioning: a second advisory lock waits for the first transaction", async () => {
    const user = await seedUser(db.dataSource);
    const order: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const lockTaken = new Promise<void>((resolve) => (locked = resolve));
    const first = db.dataSource.transaction(async (m) => {
      await repo.lockProvisioning(m, user);
      locked();
      await held;
      order.push('first');
    });
    await lockTaken;
    const second = db.dataSource.transaction(async (m) => {
      await repo.lockProvisioning(m, user);
      order.push('second');
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    release();
    await Promise.all([first, second]);
    expect(order).toEqual(['first', 'second']);
  });
});
