import { SnapshotInstancesRepository } from 'src/modules/publication/snapshot-instances.repository';
import { BuiltVersion, SnapshotVersionsRepository } from 'src/modules/publication/snapshot-versions.repository';
import { openRepositoryDatabase, RepositoryDatabase } from 'test/support/repository-database';
import { seedTenant } from 'test/platform/tenancy-seed';

describe('SnapshotVersionsRepository', () => {
  let db: RepositoryDatabase;
  let repo: SnapshotVersionsRepository;

  beforeAll(async () => {
    db = await openRepositoryDatabase();
    repo = new SnapshotVersionsRepository(db.dataSource);
  });
  afterAll(() => db.close());

  const built = (workspaceId: string, version: number, over: Partial<BuiltVersion> = {}): BuiltVersion => ({
    workspaceId,
    version,
    env: 'dev',
    generatedAt: '2026-11-29T00:00:00.000Z',
    contentHash: 'sha256:c1',
    body: '{"policy":null}',
    digest: `sha256:d${version}`,
    kid: 'kid-1',
    signature: `sig-${version}`,
    size: 100,
    ...over,
  });

  it('records a cause once, then the first built document of the version only; stored joins header and content', async () => {
    const { workspaceId } = await seedTenant(db.dataSource);
    await db.dataSource.transaction((m) => repo.recordCause(m, workspaceId, 1, 'workspace.create'));
    await db.dataSource.transaction((m) => repo.recordCause(m, workspaceId, 1, 'policy.publish'));
    expect(await repo.digest(workspaceId, 1)).toBeNull();
    expect(await repo.digest(workspaceId, 2)).toBeUndefined();
    expect(await repo.stored(workspaceId, 1)).toBeUndefined();
    expect(await repo.record(built(workspaceId, 1))).toBe(true);
    expect(await repo.record(built(workspaceId, 1, { digest: 'sha256:other', contentHash: 'sha256:c2', body: '{}' }))).toBe(false);
    expect(await repo.stored(workspaceId, 1)).toEqual({
      version: 1,
      env: 'dev',
      generated_at: new Date('2026-11-29T00:00:00.000Z'),
      digest: 'sha256:d1',
      kid: 'kid-1',
      signature: 'sig-1',
      body: '{"policy":null}',
    });
    expect(await db.dataSource.query(`SELECT cause FROM snapshot_versions WHERE workspace_id = $1`, [workspaceId])).toEqual([{ cause: 'workspace.create' }]);
    // Identical content is stored once (the losing document's content row stays, as the one statement pair always left it).
    const contents = async () => (await db.dataSource.query(`SELECT content_hash FROM snapshot_contents WHERE workspace_id = $1 ORDER BY content_hash`, [workspaceId])).map((r: { content_hash: string }) => r.content_hash);
    expect(await contents()).toEqual(['sha256:c1', 'sha256:c2']);
    expect(await repo.record(built(workspaceId, 2))).toBe(true);
    expect(await contents()).toEqual(['sha256:c1', 'sha256:c2']);
  });

  it('marks a version published once, pages published versions newest first, and reads a version publication', async () => {
    const { workspaceId } = await seedTenant(db.dataSource);
    for (const v of [1, 2, 3]) await repo.record(built(workspaceId, v));
    expect(await repo.publishedPage(workspaceId, null, 10)).toEqual([]);
    await repo.markPublished(workspaceId, 1);
    const first = (await repo.publication(workspaceId, 1))!.published_at;
    await repo.markPublished(workspaceId, 1);
    expect((await repo.publication(workspaceId, 1))!.published_at).toEqual(first);
    await repo.markPublished(workspaceId, 3);
    expect((await repo.publishedPage(workspaceId, null, 10)).map((r) => r.version)).toEqual([3, 1]);
    expect((await repo.publishedPage(workspaceId, 3, 10)).map((r) => r.version)).toEqual([1]);
    expect((await repo.publishedPage(workspaceId, null, 1)).map((r) => r.version)).toEqual([3]);
    expect(await repo.publication(workspaceId, 2)).toEqual({ digest: 'sha256:d2', published_at: null, converged_at: null });
    expect(await repo.publication(workspaceId, 9)).toBeUndefined();
  });

  it('finds the documents signed by a kid outside the fresh ones, for the versions asked', async () => {
    const a = (await seedTenant(db.dataSource)).workspaceId;
    const b = (await seedTenant(db.dataSource)).workspaceId;
    await repo.record(built(a, 1, { kid: 'old' }));
    await repo.record(built(b, 1, { kid: 'new' }));
    await db.dataSource.transaction((m) => repo.recordCause(m, b, 2, 'policy.publish'));
    expect(await repo.staleSigned([], ['new'])).toEqual([]);
    expect(await repo.staleSigned([{ id: a, version: 1 }, { id: b, version: 1 }], ['new'])).toEqual([a]);
    // A staged version not built yet has no kid: not stale.
    expect(await repo.staleSigned([{ id: b, version: 2 }], [])).toEqual([]);
    expect(await db.dataSource.transaction((m) => repo.staleSigned([{ id: a, version: 1 }], ['old', 'new'], m))).toEqual([]);
  });

  it('converges a published version once no live instance is behind it', async () => {
    const { workspaceId } = await seedTenant(db.dataSource);
    const instances = new SnapshotInstancesRepository(db.dataSource);
    await repo.record(built(workspaceId, 2));
    await repo.markPublished(workspaceId, 2);
    const report = (instance: string, version: number) =>
      db.dataSource.transaction((m) => instances.report(m, workspaceId, { instance_id: instance, version, digest: `sha256:d${version}`, applied_at: new Date() }));
    await report('gw-a', 1);
    await report('gw-b', 2);
    expect(await db.dataSource.transaction((m) => repo.converge(m, workspaceId, 2, 600))).toBeUndefined();
    await report('gw-a', 2);
    const converged = await db.dataSource.transaction((m) => repo.converge(m, workspaceId, 2, 600));
    expect(converged?.converged_at).toBeInstanceOf(Date);
    expect(await db.dataSource.transaction((m) => repo.converge(m, workspaceId, 2, 600))).toBeUndefined();
  });

  it('prunes old versions beyond the newest kept ones, never the newest published one, and their unused contents, in bounded steps', async () => {
    const { workspaceId } = await seedTenant(db.dataSource);
    for (let v = 1; v <= 8; v++) await repo.record(built(workspaceId, v, { contentHash: v <= 3 ? `sha256:own${v}` : 'sha256:shared', body: `{"v":${v <= 3 ? v : 0}}` }));
    for (let v = 1; v <= 6; v++) await repo.markPublished(workspaceId, v);
    // hand-written: test-only state (versions aged 40 days).
    await db.dataSource.query(`UPDATE snapshot_versions SET staged_at = now() - interval '40 days' WHERE workspace_id = $1`, [workspaceId]);
    // Keep the newest 3 (6-8) and every version younger than 30 days: 1-5 may go, 2 per step.
    expect(await repo.prune(30, 3, 2)).toBe(2);
    expect(await repo.prune(30, 3, 2)).toBe(2);
    expect(await repo.prune(30, 3, 2)).toBe(1);
    expect(await repo.prune(30, 3, 2)).toBe(0);
    expect((await db.dataSource.query(`SELECT version FROM snapshot_versions WHERE workspace_id = $1 ORDER BY version`, [workspaceId])).map((r: { version: number }) => r.version)).toEqual([6, 7, 8]);
    expect(await db.dataSource.query(`SELECT content_hash FROM snapshot_contents WHERE workspace_id = $1`, [workspaceId])).toEqual([{ content_hash: 'sha256:shared' }]);
  });

  it('prunes nothing newer than the newest published version, however old', async () => {
    const { workspaceId } = await seedTenant(db.dataSource);
    for (let v = 1; v <= 4; v++) await repo.record(built(workspaceId, v));
    await db.dataSource.query(`UPDATE snapshot_versions SET staged_at = now() - interval '40 days' WHERE workspace_id = $1`, [workspaceId]);
    expect(await repo.prune(30, 0, 100)).toBe(0);
    await repo.markPublished(workspaceId, 2);
    expect(await repo.prune(30, 0, 100)).toBe(1);
  });

  it('runs work in one REPEATABLE READ transaction', async () => {
    expect(await repo.consistentRead(async (m) => (await m.query(`SHOW transaction_isolation`))[0].transaction_isolation)).toBe('repeatable read');
  });
});
