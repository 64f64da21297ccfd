import { randomBytes } from 'node:crypto';
import { EntityManager } from 'typeorm';
import { VirtualKeyRemovalsRepository } from 'src/modules/keys/virtual-key-removals.repository';
import { NewKey, VirtualKeysRepository } from 'src/modules/keys/virtual-keys.repository';
import { openRepositoryDatabase, RepositoryDatabase } from 'test/support/repository-database';

const hex = () => randomBytes(32).toString('hex');

describe('VirtualKeysRepository', () => {
  let db: RepositoryDatabase;
  let keys: VirtualKeysRepository;
  let removals: VirtualKeyRemovalsRepository;
  let manager: EntityManager;
  const ws = 'ws_keys_repo';
  const other = 'ws_keys_other';
  let n = 0;
  const newKey = (over: Partial<NewKey> = {}): NewKey => ({
    id: `key_${++n}`, workspaceId: ws, env: 'stage', agentId: `agent-${n}`, prefix: 'ob_test', keyHash: hex(), last4: 'abcd',
    allowedModels: ['*'], allowedTools: ['*'], toolsMode: 'full', budgetMicrosUsdMonth: null, rpm: null, tpm: null,
    scopes: ['llm'], attributes: '{"team":"a"}', expiresAt: null, ...over,
  });
  const mint = (over: Partial<NewKey> = {}) => keys.insert(manager, newKey(over));

  beforeAll(async () => {
    db = await openRepositoryDatabase();
    keys = new VirtualKeysRepository(db.dataSource);
    removals = new VirtualKeyRemovalsRepository();
    manager = db.dataSource.manager;
    // The owning workspaces (a table of the workspaces module), as its own migration shapes them.
    await db.dataSource.query(`INSERT INTO organizations (id) VALUES ('org_keys')`);
    await db.dataSource.query(`INSERT INTO workspaces (id, org_id, slug, env) VALUES ($1, 'org_keys', 'a', 'stage'), ($2, 'org_keys', 'b', 'prod')`, [ws, other]);
  });
  afterAll(() => db.close());

  it('inserts a key and answers its document row, with env stored and last_used_at null', async () => {
    const row = await mint({ budgetMicrosUsdMonth: 5, rpm: 7 });
    expect(row).toMatchObject({ workspace_id: ws, prefix: 'ob_test', allowed_models: ['*'], scopes: ['llm'], attributes: { team: 'a' }, budget_micros_usd_month: '5', rpm: '7' });
    expect(row.last_used_at).toBeNull();
    expect(row.created_at).toBeInstanceOf(Date);
    expect((await keys.lockContext(manager, row.id))!.env).toBe('stage');
  });

  it('refuses an env outside dev, stage and prod (the same CHECK as workspaces.env)', async () => {
    await expect(mint({ env: 'qa' as never })).rejects.toThrow(/virtual_keys_env_check/);
  });

  it('lists by creation and by last use (never used first)', async () => {
    const list = await keys.list(other, 'created');
    expect(list).toEqual([]);
    const a = await mint({ workspaceId: other, env: 'prod', prefix: 'ob_live' });
    const b = await mint({ workspaceId: other, env: 'prod', prefix: 'ob_live' });
    await db.dataSource.query(`INSERT INTO virtual_key_usage (key_id, workspace_id, last_used_at) VALUES ($1, $2, clock_timestamp())`, [a.id, other]);
    expect((await keys.list(other, 'created')).map((r) => r.id)).toEqual([a.id, b.id]);
    expect((await keys.list(other, 'last_used')).map((r) => r.id)).toEqual([b.id, a.id]);
    expect((await keys.list(other, 'created'))[0].last_used_at).toBeInstanceOf(Date);
  });

  it('looks a digest up alone: current secret, replaced secret in its grace, unknown digest', async () => {
    const key = await mint();
    expect(await keys.byHash(key.key_hash)).toMatchObject({ id: key.id, env: 'stage', previous: false });
    expect(await keys.byHash(hex())).toBeUndefined();
    const rotated = await keys.rotate(manager, ws, key.id, 60, hex(), 'wxyz');
    expect(rotated).toMatchObject({ previous_key_hash: key.key_hash, previous_last4: key.last4, last4: 'wxyz' });
    expect(await keys.byHash(key.key_hash)).toMatchObject({ id: key.id, previous: true });
    // A grace of 0 seconds: the replaced secret is no longer named.
    const again = await keys.rotate(manager, ws, key.id, 0, hex(), 'zzzz');
    expect(await keys.byHash(again.previous_key_hash!)).toBeUndefined();
  });

  it('locks for rotation with whether a rotation landed since the arrival', async () => {
    const key = await mint();
    expect(await keys.lockForRotation(manager, ws, key.id, 10)).toMatchObject({ id: key.id, rotated_since_arrival: false });
    await keys.rotate(manager, ws, key.id, 60, hex(), 'aaaa');
    expect(await keys.lockForRotation(manager, ws, key.id, 10)).toMatchObject({ rotated_since_arrival: true });
    expect(await keys.lockForRotation(manager, other, key.id, 10)).toBeUndefined();
  });

  it('revokes: revoked_at set, a grace ended, pending again; document shows the flags', async () => {
    const key = await mint();
    await keys.rotate(manager, ws, key.id, 600, hex(), 'bbbb');
    await keys.markSettled(manager, key.id);
    expect(await keys.document(ws, key.id)).toMatchObject({ hot_path_pending: false, removal_due: false });
    const revoked = await keys.revoke(manager, ws, key.id);
    expect(revoked.revoked_at).toBeInstanceOf(Date);
    expect(revoked.previous_valid_until!.getTime()).toBeLessThanOrEqual(revoked.revoked_at!.getTime());
    expect(await keys.document(ws, key.id)).toMatchObject({ hot_path_pending: true });
    expect(await keys.lockDocument(manager, ws, key.id)).toMatchObject({ id: key.id });
    expect(await keys.document(other, key.id)).toBeUndefined();
  });

  it('counts, active counts, active agents, agent of a key, budget caps', async () => {
    const id = 'ws_keys_counts';
    await db.dataSource.query(`INSERT INTO workspaces (id, org_id, slug, env) VALUES ($1, 'org_keys', 'c', 'dev')`, [id]);
    const a = await mint({ workspaceId: id, env: 'dev', agentId: 'x', budgetMicrosUsdMonth: 100 });
    const b = await mint({ workspaceId: id, env: 'dev', agentId: 'y', budgetMicrosUsdMonth: 200 });
    await mint({ workspaceId: id, env: 'dev', agentId: 'z', expiresAt: new Date(Date.now() - 1000) });
    await keys.revoke(manager, id, b.id);
    expect(await keys.counts(id)).toEqual({ total: 3, active: 1 });
    expect(await keys.activeCount(id)).toBe(1);
    expect(await keys.hasActiveKey(manager, id, 'x')).toBe(true);
    expect(await keys.hasActiveKey(manager, id, 'y')).toBe(false);
    expect(await keys.hasActiveKey(manager, id, 'z')).toBe(false);
    expect(await keys.budgetCaps(id)).toEqual([{ id: a.id, cap: '100' }]);
  });

  it('pages the unsettled keys by id: pending ones and ones with a removal due', async () => {
    const id = 'ws_keys_unsettled';
    await db.dataSource.query(`INSERT INTO workspaces (id, org_id, slug, env) VALUES ($1, 'org_keys', 'd', 'dev')`, [id]);
    // Settle everything so far.
    for (let page = await keys.unsettled('', 1000); page.length > 0; page = await keys.unsettled('', 1000)) {
      for (const keyId of page) {
        await keys.markSettled(manager, keyId);
        await db.dataSource.transaction(async (m) => removals.delete(m, keyId, await removals.lockDue(m, keyId)));
      }
    }
    const pending = await mint({ workspaceId: id, env: 'dev' });
    const due = await mint({ workspaceId: id, env: 'dev' });
    await keys.markSettled(manager, due.id);
    await removals.schedule(manager, due.id, id, [[hex(), new Date(Date.now() - 1000)]]);
    const later = await mint({ workspaceId: id, env: 'dev' });
    await keys.markSettled(manager, later.id);
    await removals.schedule(manager, later.id, id, [[hex(), new Date(Date.now() + 60_000)]]);
    const ids = [pending.id, due.id].sort();
    expect(await keys.unsettled('', 10)).toEqual(ids);
    expect(await keys.unsettled('', 1)).toEqual([ids[0]]);
    expect(await keys.unsettled(ids[0], 10)).toEqual([ids[1]]);
  });

  it('lists unrevoked keys expiring in (from, to], soonest first', async () => {
    const from = new Date(Date.now() + 86_400_000 * 1000);
    const soon = await mint({ expiresAt: new Date(from.getTime() + 2000) });
    const sooner = await mint({ expiresAt: new Date(from.getTime() + 1000) });
    await mint({ expiresAt: from });
    const revoked = await mint({ expiresAt: new Date(from.getTime() + 1500) });
    await keys.revoke(manager, ws, revoked.id);
    await mint({ expiresAt: new Date(from.getTime() + 10_000) });
    const rows = await keys.expiring(from, new Date(from.getTime() + 5000));
    expect(rows.map((r) => r.id)).toEqual([sooner.id, soon.id]);
    expect(rows[0]).toMatchObject({ workspaceId: ws, agentId: sooner.agent_id, expiresAt: new Date(from.getTime() + 1000) });
  });
});
