import { SnapshotInstancesRepository } from 'src/modules/publication/snapshot-instances.repository';
import { BuiltVersion, SnapshotVersionsRepository } from 'src/modules/publication/snapshot-versions.repository';
import { openRepositoryDatabase, RepositoryDatabase } from 'test/support/repository-database';
import { seedTenant } from 'test/platform/tenancy-seed';

describe('SnapshotInstancesRepository', () => {
  let db: RepositoryDatabase;
  let repo: SnapshotInstancesRepository;

  beforeAll(async () => {
    db = await openRepositoryDatabase();
    repo = new SnapshotInstancesRepository(db.dataSource);
  });
  afterAll(() => db.close());

  const report = (workspaceId: string, instance: string, version: number, appliedAt = new Date()) =>
    db.dataSource.transaction(async (m) => {
      await repo.lockWorkspaceReports(m, workspaceId);
      return repo.report(m, workspaceId, { instance_id: instance, version, digest: `sha256:d${version}`, applied_at: appliedAt });
    });

  it('keeps the highest version reported (the later of equal ones), always refreshing reported_at', async () => {
    const { workspaceId } = await seedTenant(db.dataSource);
    const first = await report(workspaceId, 'gw-a', 2, new Date('2026-01-01T00:00:00Z'));
    expect(first).toMatchObject({ instance_id: 'gw-a', version: 2, digest: 'sha256:d2', applied_at: new Date('2026-01-01T00:00:00Z') });
    const older = await report(workspaceId, 'gw-a', 1);
    expect(older).toMatchObject({ version: 2, digest: 'sha256:d2', applied_at: new Date('2026-01-01T00:00:00Z') });
    expect(older.reported_at.getTime()).toBeGreaterThanOrEqual(first.reported_at.getTime());
    const again = await report(workspaceId, 'gw-a', 2, new Date('2026-01-02T00:00:00Z'));
    expect(again.applied_at).toEqual(new Date('2026-01-02T00:00:00Z'));
    await report(workspaceId, 'gw-0', 1);
    expect((await repo.list(workspaceId)).map((i) => [i.instance_id, i.version])).toEqual([
      ['gw-0', 1],
      ['gw-a', 2],
    ]);
  });

  it('counts live instances behind their workspace newest published version', async () => {
    const { workspaceId } = await seedTenant(db.dataSource);
    const versions = new SnapshotVersionsRepository(db.dataSource);
    const built = (version: number): BuiltVersion => ({ workspaceId, version, env: 'dev', generatedAt: new Date(), contentHash: 'sha256:c', body: '{}', digest: `sha256:d${version}`, kid: 'k', signature: 's', size: 1 });
    const before = await repo.countBehind(600);
    await report(workspaceId, 'gw-a', 1);
    await report(workspaceId, 'gw-b', 2);
    expect(await repo.countBehind(600)).toBe(before);
    await versions.record(built(2));
    await versions.markPublished(workspaceId, 2);
    expect(await repo.countBehind(600)).toBe(before + 1);
    expect(await repo.countBehind(0)).toBe(0);
  });

  it('forgets instances silent for the given hours, at most `limit` a step', async () => {
    const { workspaceId } = await seedTenant(db.dataSource);
    for (const instance of ['gw-1', 'gw-2', 'gw-3']) await report(workspaceId, instance, 1);
    // hand-written: test-only state (reports aged 25 hours).
    await db.dataSource.query(`UPDATE snapshot_instances SET reported_at = now() - interval '25 hours' WHERE workspace_id = $1 AND instance_id <> 'gw-3'`, [workspaceId]);
    expect(await repo.forgetSilent(24, 1)).toBe(1);
    expect(await repo.forgetSilent(24, 10)).toBe(1);
    expect(await repo.forgetSilent(24, 10)).toBe(0);
    expect((await repo.list(workspaceId)).map((i) => i.instance_id)).toEqual(['gw-3']);
  });
});
