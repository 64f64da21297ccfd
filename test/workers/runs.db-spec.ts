import { DataSource } from 'typeorm';
import { RunsRepository } from 'src/modules/workers/runs/runs.repository';
import { openRepositoryDatabase, RepositoryDatabase } from 'test/support/repository-database';

describe('RunsRepository', () => {
  let db: RepositoryDatabase;
  let ds: DataSource;
  let repo: RunsRepository;

  async function workspace(id: string): Promise<string> {
    await ds.query(`INSERT INTO organizations (id) VALUES ($1)`, [`org_${id}`]);
    await ds.query(`INSERT INTO workspaces (id, org_id, slug, env) VALUES ($1, $2, $1, 'dev')`, [id, `org_${id}`]);
    return id;
  }
  const run = (ws: string, id: string, over: { kind?: string; status?: 'starting' | 'running' | 'paused' | 'succeeded'; classes?: string[] } = {}) =>
    ds.transaction((m) =>
      repo.insert(m, {
        id,
        workspaceId: ws,
        kind: over.kind ?? 'run',
        workerId: null,
        revisionId: null,
        templateId: null,
        status: over.status ?? 'starting',
        environmentClasses: (over.classes ?? ['code']) as never,
        sessionProfileId: null,
        input: { a: 1 },
        createdByUserId: 'usr_1',
      }),
    );

  beforeAll(async () => {
    db = await openRepositoryDatabase();
    ds = db.dataSource;
    repo = new RunsRepository(ds);
  });
  afterAll(() => db.close());

  it('records a run and reads the stored row back', async () => {
    const ws = await workspace('ws_r');
    const row = await run(ws, 'run_1', { classes: ['code', 'browser'] });
    expect(row).toMatchObject({ id: 'run_1', status: 'starting', environmentClasses: ['code', 'browser'], input: { a: 1 }, failure: null, endedAt: null });
    expect(row.createdAt).toBeInstanceOf(Date);
    expect(await repo.find(ws, 'run_1')).toEqual(row);
    expect(await repo.find('ws_other', 'run_1')).toBeNull();
  });

  it('queues, fails and moves a run between states; a move from a state it is not in changes nothing', async () => {
    const ws = await workspace('ws_m');
    await run(ws, 'run_q');
    expect(await ds.transaction((m) => repo.queue(m, ws, 'run_q', 'orch_1'))).toMatchObject({ status: 'queued', orchestratorRunId: 'orch_1' });
    expect(await ds.transaction((m) => repo.move(m, ws, 'run_q', ['running'], 'paused', false))).toBeNull();
    const cancelled = await ds.transaction((m) => repo.move(m, ws, 'run_q', ['starting', 'queued'], 'cancelled', true));
    expect(cancelled).toMatchObject({ status: 'cancelled', endedAt: expect.any(Date) });
    await run(ws, 'run_p', { status: 'running' });
    expect(await ds.transaction((m) => repo.move(m, ws, 'run_p', ['running'], 'paused', false))).toMatchObject({ status: 'paused', endedAt: null });
    await run(ws, 'run_f');
    await ds.transaction((m) => repo.fail(m, ws, 'run_f', { code: 'orchestrator_refused', set_by: 'control' }));
    expect(await repo.find(ws, 'run_f')).toMatchObject({ status: 'failed', failure: { code: 'orchestrator_refused', set_by: 'control' }, endedAt: expect.any(Date) });
  });

  it('gives the control lease only while running or paused, and not over another holder', async () => {
    const ws = await workspace('ws_l');
    await run(ws, 'run_l', { status: 'running' });
    const lease = (holder: string, expiresAt = new Date(Date.now() + 60_000)) =>
      ds.transaction((m) => repo.takeLease(m, ws, 'run_l', { leaseId: `lse_${holder}`, holder, expiresAt }));
    expect(await lease('usr_a')).toMatchObject({ controlLeaseId: 'lse_usr_a', controlLeaseHolder: 'usr_a' });
    expect(await lease('usr_b')).toBeNull();
    expect(await lease('usr_a')).toMatchObject({ controlLeaseHolder: 'usr_a' });
    await ds.query(`UPDATE worker_runs SET control_lease_expires_at = now() - interval '1 second' WHERE id = 'run_l'`);
    expect(await lease('usr_b')).toMatchObject({ controlLeaseHolder: 'usr_b' });
    await run(ws, 'run_s', { status: 'succeeded' });
    expect(await ds.transaction((m) => repo.takeLease(m, ws, 'run_s', { leaseId: 'lse_x', holder: 'usr_a', expiresAt: new Date() }))).toBeNull();
  });

  it('pages newest first with the status and worker filters', async () => {
    const ws = await workspace('ws_p');
    for (const id of ['run_a', 'run_b', 'run_c']) await run(ws, id, { status: id === 'run_b' ? 'running' : 'starting' });
    const all = await repo.page(ws, {}, null, 10);
    expect(all.map((r) => r.id)).toEqual(['run_c', 'run_b', 'run_a']);
    expect((await repo.page(ws, {}, null, 1)).map((r) => r.id)).toEqual(['run_c', 'run_b']);
    expect((await repo.page(ws, {}, { at: all[0].createdAt, id: all[0].id }, 10)).map((r) => r.id)).toEqual(['run_b', 'run_a']);
    expect((await repo.page(ws, { status: 'running' }, null, 10)).map((r) => r.id)).toEqual(['run_b']);
    expect(await repo.page(ws, { workerId: 'wkr_none' }, null, 10)).toEqual([]);
  });

  it('counts the month: accepted runs and demos, active runs and their environments, per class', async () => {
    const ws = await workspace('ws_c');
    expect(await repo.counts(ws)).toMatchObject({ runs: 0, demos: 0, active: 0, environments: 0, period_start: expect.any(Date) });
    expect(await repo.activeByClass(ws)).toEqual(new Map());
    await run(ws, 'run_c1', { status: 'running', classes: ['code', 'browser'] });
    await run(ws, 'run_c2', { kind: 'demo', status: 'succeeded' });
    await run(ws, 'run_c3', { status: 'succeeded' });
    await ds.query(`UPDATE worker_runs SET orchestrator_run_id = 'o' WHERE id IN ('run_c1', 'run_c2')`);
    await run(ws, 'run_old', { status: 'succeeded' });
    await ds.query(`UPDATE worker_runs SET orchestrator_run_id = 'o', created_at = now() - interval '40 days' WHERE id = 'run_old'`);
    const counts = await repo.counts(ws);
    expect(counts).toMatchObject({ runs: 1, demos: 1, active: 1, environments: 2 });
    expect(counts.period_start.toISOString()).toMatch(/^\d{4}-\d{2}-01T00:00:00\.000Z$/);
    expect(await repo.activeByClass(ws)).toEqual(new Map([['code', 1], ['browser', 1]]));
  });

  it('counts a worker\'s active runs', async () => {
    const ws = await workspace('ws_wa');
    await ds.query(`INSERT INTO workers (id, workspace_id, env, slug, display_name, agent_passport_id, lifecycle, latest_revision_number, created_by_user_id)
                    VALUES ('wkr_a', $1, 'dev', 'a', 'a', 'agent', 'draft', 1, 'usr_1')`, [ws]);
    await run(ws, 'run_wa');
    await ds.query(`UPDATE worker_runs SET worker_id = 'wkr_a' WHERE id = 'run_wa'`);
    expect(await repo.activeForWorker(ws, 'wkr_a')).toBe(1);
    expect(await ds.transaction((m) => repo.activeForWorker(ws, 'wkr_none', m))).toBe(0);
  });

  it('serves an artifact until it expires', async () => {
    const ws = await workspace('ws_a');
    await run(ws, 'run_art');
    await ds.query(
      `INSERT INTO worker_run_artifacts (id, workspace_id, run_id, name, media_type, size_bytes, digest, expires_at)
       VALUES ('art_1', $1, 'run_art', 'r.md', 'text/markdown', 12, 'sha256:ab', now() + interval '1 day'),
              ('art_old', $1, 'run_art', 'o.md', 'text/markdown', 1, 'sha256:cd', now() - interval '1 second')`,
      [ws],
    );
    expect(await repo.artifact(ws, 'run_art', 'art_1')).toMatchObject({ name: 'r.md', sizeBytes: '12', runId: 'run_art' });
    expect(await repo.artifact(ws, 'run_art', 'art_old')).toBeNull();
    expect(await repo.artifact(ws, 'run_other', 'art_1')).toBeNull();
  });
});
