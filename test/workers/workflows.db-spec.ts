import { DataSource } from 'typeorm';
import { WorkflowsRepository } from 'src/modules/workers/definitions/workflows.repository';
import { openRepositoryDatabase, RepositoryDatabase } from 'test/support/repository-database';

describe('WorkflowsRepository', () => {
  let db: RepositoryDatabase;
  let ds: DataSource;
  let repo: WorkflowsRepository;

  async function workspace(id: string): Promise<string> {
    await ds.query(`INSERT INTO organizations (id) VALUES ($1)`, [`org_${id}`]);
    await ds.query(`INSERT INTO workspaces (id, org_id, slug, env) VALUES ($1, $2, $1, 'dev')`, [id, `org_${id}`]);
    return id;
  }
  async function created(ws: string, id: string): Promise<void> {
    await ds.transaction(async (m) => {
      await repo.insert(m, {
        id,
        workspaceId: ws,
        slug: id,
        displayName: id,
        description: null,
        lifecycle: 'draft',
        draftRevisionId: `${id}_r1`,
        latestRevisionNumber: 1,
        createdByUserId: 'usr_1',
        createdByDisplayName: null,
      });
      const steps = [{ step_id: 's1', worker_id: 'wkr_1', depends_on: [] }];
      await repo.insertRevision(m, { id: `${id}_r1`, workspaceId: ws, workflowId: id, revisionNumber: 1, state: 'draft', steps, permittedTriggerTypes: ['manual'] });
    });
  }

  beforeAll(async () => {
    db = await openRepositoryDatabase();
    ds = db.dataSource;
    repo = new WorkflowsRepository(ds);
  });
  afterAll(() => db.close());

  it('stores a workflow and its draft steps, rewrites them and publishes', async () => {
    const ws = await workspace('ws_wf');
    await created(ws, 'wfl_1');
    expect(await repo.find(ws, 'wfl_1')).toMatchObject({ lifecycle: 'draft', draftRevisionId: 'wfl_1_r1', latestRevisionNumber: 1 });
    expect(await repo.revision(ws, 'wfl_1', 'wfl_1_r1')).toMatchObject({ steps: [{ step_id: 's1' }], permittedTriggerTypes: ['manual'] });
    await ds.transaction((m) => repo.updateRevision(m, ws, 'wfl_1_r1', { steps: [] }));
    expect((await repo.revision(ws, 'wfl_1', 'wfl_1_r1'))!.steps).toEqual([]);
    await ds.transaction((m) => repo.publish(m, ws, 'wfl_1', 'wfl_1_r1', 'sha256:w'));
    expect(await repo.find(ws, 'wfl_1')).toMatchObject({ lifecycle: 'published', publishedRevisionId: 'wfl_1_r1', draftRevisionId: null });
    expect((await repo.revisions(ws, 'wfl_1')).map((r) => r.state)).toEqual(['published']);
    await expect(created(ws, 'wfl_1')).rejects.toMatchObject({ code: '23505' });
  });

  it('pages in (created_at, id) order', async () => {
    const ws = await workspace('ws_wfp');
    await created(ws, 'wfl_a');
    await created(ws, 'wfl_b');
    const all = await repo.page(ws, null, 10);
    expect(all.map((r) => r.id)).toEqual(['wfl_a', 'wfl_b']);
    expect((await repo.page(ws, { at: all[0].createdAt, id: all[0].id }, 10)).map((r) => r.id)).toEqual(['wfl_b']);
    expect(await repo.page('ws_none', null, 10)).toEqual([]);
  });
});
