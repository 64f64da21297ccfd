import { DataSource } from 'typeorm';
import { PoliciesRepository } from 'src/modules/policy/policies.repository';
import { openRepositoryDatabase, RepositoryDatabase } from 'test/support/repository-database';

describe('PoliciesRepository', () => {
  let db: RepositoryDatabase;
  let ds: DataSource;
  let repo: PoliciesRepository;

  async function workspace(id: string): Promise<string> {
    await ds.query(`INSERT INTO organizations (id) VALUES ($1)`, [`org_${id}`]);
    await ds.query(`INSERT INTO workspaces (id, org_id, slug, env) VALUES ($1, $2, $1, 'dev')`, [id, `org_${id}`]);
    return id;
  }
  const revision = (ws: string, id: string, text: string, hash: string) => ({
    id,
    workspaceId: ws,
    policyId: `pol_${ws}`,
    cedarText: text,
    draftHash: hash,
    bundleHash: `bundle_${id}`,
    entities: [{ uid: { type: 'Gateway::Workspace', id: ws } }],
    publishedBy: null,
  });

  beforeAll(async () => {
    db = await openRepositoryDatabase();
    ds = db.dataSource;
    repo = new PoliciesRepository(ds);
  });
  afterAll(() => db.close());

  it('reads no state, revision or lock before a draft is stored', async () => {
    const ws = await workspace('ws_empty');
    expect(await repo.state(undefined, ws)).toBeUndefined();
    expect(await repo.currentRevision(undefined, ws)).toBeUndefined();
    expect(await repo.revision(ws, 'rev_none')).toBeNull();
    expect(await ds.transaction((m) => repo.lock(m, ws))).toBeNull();
  });

  it('stores a draft, publishes revisions and reads the state in one statement', async () => {
    const ws = await workspace('ws_a');
    const at = new Date('2026-03-01T00:00:00.123Z');
    await ds.transaction((m) => repo.insert(m, ws, `pol_${ws}`, { cedarText: 'one', draftHash: 'h1', draftUpdatedAt: at }));
    expect(await repo.state(undefined, ws)).toEqual({
      policy_id: `pol_${ws}`,
      cedar_text: 'one',
      draft_hash: 'h1',
      draft_updated_at: at,
      current_revision_id: null,
      published_at: null,
      bundle_hash: null,
      draft_published: false,
    });

    const publishedAt = await ds.transaction(async (m) => {
      const when = await repo.insertRevision(m, revision(ws, 'rev_1', 'one', 'h1'));
      await repo.setCurrentRevision(m, ws, 'rev_1');
      return when;
    });
    expect(publishedAt).toBeInstanceOf(Date);
    expect(await repo.state(undefined, ws)).toMatchObject({
      current_revision_id: 'rev_1',
      published_at: publishedAt,
      bundle_hash: 'bundle_rev_1',
      draft_published: true,
    });
    expect(await repo.currentRevision(undefined, ws)).toEqual({
      id: 'rev_1',
      cedar_text: 'one',
      draft_hash: 'h1',
      bundle_hash: 'bundle_rev_1',
      entities: [{ uid: { type: 'Gateway::Workspace', id: ws } }],
      published_at: publishedAt,
    });

    // A new draft on the database clock: no longer published, the current revision kept.
    await ds.transaction((m) => repo.updateDraft(m, ws, { cedarText: 'two', draftHash: 'h2', draftUpdatedAt: () => 'clock_timestamp()' }));
    const state = await ds.transaction((m) => repo.state(m, ws));
    expect(state).toMatchObject({ cedar_text: 'two', draft_hash: 'h2', current_revision_id: 'rev_1', draft_published: false });
    expect(state!.draft_updated_at!.getTime()).toBeGreaterThan(at.getTime());
    // Back to the text of a revision: published again.
    await ds.transaction((m) => repo.updateDraft(m, ws, { cedarText: 'one', draftHash: 'h1', draftUpdatedAt: () => 'clock_timestamp()' }));
    expect((await repo.state(undefined, ws))!.draft_published).toBe(true);

    expect(await repo.revision(ws, 'rev_1')).toEqual({ id: 'rev_1', cedarText: 'one', draftHash: 'h1' });
    expect(await repo.revision('ws_empty', 'rev_1')).toBeNull();
    expect(await ds.transaction((m) => repo.lock(m, ws))).toEqual({ id: `pol_${ws}`, draftHash: 'h1', currentRevisionId: 'rev_1' });
  });

  it('locks the draft row FOR UPDATE until the transaction ends', async () => {
    const ws = await workspace('ws_lock');
    await ds.transaction((m) => repo.insert(m, ws, `pol_${ws}`, { cedarText: 'x', draftHash: 'hx', draftUpdatedAt: new Date() }));
    const runner = ds.createQueryRunner();
    await runner.connect();
    await runner.startTransaction();
    try {
      await repo.lock(runner.manager, ws);
      const other = ds.transaction(async (m) => {
        await m.query(`SET LOCAL lock_timeout = '200ms'`);
        return repo.lock(m, ws);
      });
      await expect(other).rejects.toThrow(/lock timeout/);
    } finally {
      await runner.rollbackTransaction();
      await runner.release();
    }
  });

  it('refuses a second policy for the workspace, and revisions stay immutable', async () => {
    const ws = await workspace('ws_b');
    await ds.transaction((m) => repo.insert(m, ws, `pol_${ws}`, { cedarText: 'x', draftHash: 'hx', draftUpdatedAt: new Date() }));
    const second = ds.transaction((m) => repo.insert(m, ws, 'pol_other', { cedarText: 'y', draftHash: 'hy', draftUpdatedAt: new Date() }));
    await expect(second).rejects.toThrow(/duplicate key/);
    await ds.transaction((m) => repo.insertRevision(m, revision(ws, 'rev_b', 'x', 'hx')));
    await expect(ds.query(`UPDATE policy_revisions SET cedar_text = 'z' WHERE id = 'rev_b'`)).rejects.toThrow('policy revisions are immutable');
  });
});
