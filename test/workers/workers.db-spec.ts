import { DataSource } from 'typeorm';
import { WorkersRepository } from 'src/modules/workers/definitions/workers.repository';
import { WorkerRevision } from 'src/modules/workers/entities/worker-revision.entity';
import { Worker } from 'src/modules/workers/entities/worker.entity';
import { openRepositoryDatabase, RepositoryDatabase } from 'test/support/repository-database';

describe('WorkersRepository (and the RevisionedRepository statements it shares with workflows)', () => {
  let db: RepositoryDatabase;
  let ds: DataSource;
  let repo: WorkersRepository;

  async function workspace(id: string): Promise<string> {
    await ds.query(`INSERT INTO organizations (id) VALUES ($1)`, [`org_${id}`]);
    await ds.query(`INSERT INTO workspaces (id, org_id, slug, env) VALUES ($1, $2, $1, 'dev')`, [id, `org_${id}`]);
    return id;
  }
  const worker = (ws: string, id: string, slug: string, draft: string): Partial<Worker> => ({
    id,
    workspaceId: ws,
    env: 'dev',
    slug,
    displayName: slug,
    description: null,
    agentPassportId: 'agent',
    lifecycle: 'draft',
    draftRevisionId: draft,
    latestRevisionNumber: 1,
    templateId: null,
    createdByUserId: 'usr_1',
    createdByDisplayName: 'a@example.com',
  });
  const revision = (ws: string, workerId: string, id: string, number: number): Partial<WorkerRevision> => ({
    id,
    workspaceId: ws,
    workerId,
    revisionNumber: number,
    state: 'draft',
    body: { environment_requests: [{ environment_class: 'code' }] },
    permissionPreset: 'safe_writes',
    policyRevisionId: 'ppr_1',
    executionMode: 'balanced',
    limits: { concurrency: 1 },
    allowedCapabilities: ['read'],
    uiActions: [],
  });
  /** A worker with its draft v1. */
  async function created(ws: string, id: string, slug = id): Promise<void> {
    await ds.transaction(async (m) => {
      await repo.insert(m, worker(ws, id, slug, `${id}_r1`));
      await repo.insertRevision(m, revision(ws, id, `${id}_r1`, 1));
    });
  }

  beforeAll(async () => {
    db = await openRepositoryDatabase();
    ds = db.dataSource;
    repo = new WorkersRepository(ds);
  });
  afterAll(() => db.close());

  it('inserts a worker and its draft; the database stamps the times and the slug is taken once', async () => {
    const ws = await workspace('ws_w');
    await created(ws, 'wkr_1', 'one');
    expect(await repo.find(ws, 'wkr_1')).toMatchObject({ slug: 'one', lifecycle: 'draft', publishedRevisionId: null, createdAt: expect.any(Date) });
    expect(await repo.find('ws_other', 'wkr_1')).toBeNull();
    expect(await repo.revision(ws, 'wkr_1', 'wkr_1_r1')).toMatchObject({ state: 'draft', body: { environment_requests: [{ environment_class: 'code' }] } });
    expect(await repo.revision(ws, 'wkr_other', 'wkr_1_r1')).toBeNull();
    await expect(ds.transaction((m) => repo.insert(m, worker(ws, 'wkr_dup', 'one', 'x')))).rejects.toMatchObject({ code: '23505' });
  });

  it('locks the worker row FOR UPDATE inside a transaction', async () => {
    const ws = await workspace('ws_lock');
    await created(ws, 'wkr_l');
    await ds.transaction(async (m) => {
      expect(await repo.find(ws, 'wkr_l', m, true)).toMatchObject({ id: 'wkr_l' });
      const other = ds.createQueryRunner();
      try {
        await other.query(`SET lock_timeout = '100ms'`);
        await expect(other.query(`SELECT 1 FROM workers WHERE id = 'wkr_l' FOR UPDATE`)).rejects.toMatchObject({ code: '55P03' });
      } finally {
        await other.release();
      }
    });
  });

  it('rewrites the draft, points the worker at a new draft, and publishes (superseding the live revision)', async () => {
    const ws = await workspace('ws_pub');
    await created(ws, 'wkr_p');
    await ds.transaction((m) => repo.updateRevision(m, ws, 'wkr_p_r1', { executionMode: 'safe', body: { instructions: 'x' } }));
    expect(await repo.revision(ws, 'wkr_p', 'wkr_p_r1')).toMatchObject({ executionMode: 'safe', body: { instructions: 'x' } });
    await ds.transaction((m) => repo.publish(m, ws, 'wkr_p', 'wkr_p_r1', 'sha256:one'));
    expect(await repo.find(ws, 'wkr_p')).toMatchObject({ lifecycle: 'published', publishedRevisionId: 'wkr_p_r1', draftRevisionId: null });
    expect(await repo.revision(ws, 'wkr_p', 'wkr_p_r1')).toMatchObject({ state: 'published', revisionDigest: 'sha256:one', publishedAt: expect.any(Date) });
    expect(await ds.transaction((m) => repo.publishedIds(m, ws))).toEqual(new Set(['wkr_p']));

    await ds.transaction(async (m) => {
      await repo.insertRevision(m, revision(ws, 'wkr_p', 'wkr_p_r2', 2));
      await repo.pointDraft(m, ws, 'wkr_p', 'wkr_p_r2', 2);
    });
    expect(await repo.find(ws, 'wkr_p')).toMatchObject({ draftRevisionId: 'wkr_p_r2', latestRevisionNumber: 2, publishedRevisionId: 'wkr_p_r1' });
    await ds.transaction((m) => repo.publish(m, ws, 'wkr_p', 'wkr_p_r2', 'sha256:two'));
    const states = (await repo.revisions(ws, 'wkr_p')).map((r) => [r.id, r.revisionNumber, r.state]);
    expect(states).toEqual([
      ['wkr_p_r2', 2, 'published'],
      ['wkr_p_r1', 1, 'superseded'],
    ]);
    expect(await repo.revisions(ws, 'wkr_none')).toEqual([]);
  });

  it('pages in (created_at, id) order, optionally of one lifecycle', async () => {
    const ws = await workspace('ws_page');
    for (const id of ['wkr_a', 'wkr_b', 'wkr_c']) await created(ws, id);
    await ds.transaction((m) => repo.publish(m, ws, 'wkr_b', 'wkr_b_r1', 'sha256:b'));
    const all = await repo.page(ws, null, 10);
    expect(all.map((r) => r.id)).toEqual(['wkr_a', 'wkr_b', 'wkr_c']);
    expect((await repo.page(ws, null, 1)).map((r) => r.id)).toEqual(['wkr_a', 'wkr_b']);
    expect((await repo.page(ws, { at: all[1].createdAt, id: all[1].id }, 10)).map((r) => r.id)).toEqual(['wkr_c']);
    expect((await repo.page(ws, null, 10, 'draft')).map((r) => r.id)).toEqual(['wkr_a', 'wkr_c']);
    expect((await repo.page(ws, null, 10, 'retired')).map((r) => r.id)).toEqual([]);
  });
});
