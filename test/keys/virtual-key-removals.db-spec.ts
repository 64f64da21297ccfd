import { randomBytes } from 'node:crypto';
import { Client, Notification } from 'pg';
import { VirtualKeyRemoval } from 'src/modules/keys/entities/virtual-key-removal.entity';
import { VirtualKeyRemovalsRepository } from 'src/modules/keys/virtual-key-removals.repository';
import { VirtualKeysRepository } from 'src/modules/keys/virtual-keys.repository';
import { openRepositoryDatabase, RepositoryDatabase } from 'test/support/repository-database';

const hex = () => randomBytes(32).toString('hex');

describe('VirtualKeyRemovalsRepository', () => {
  let db: RepositoryDatabase;
  let removals: VirtualKeyRemovalsRepository;
  let keys: VirtualKeysRepository;
  const ws = 'ws_removals';
  let n = 0;
  const mint = () =>
    keys.insert(db.dataSource.manager, {
      id: `key_r${++n}`, workspaceId: ws, env: 'dev', agentId: 'a', prefix: 'ob_test', keyHash: hex(), last4: 'abcd', allowedModels: ['*'],
      allowedTools: ['*'], toolsMode: 'full', budgetMicrosUsdMonth: null, rpm: null, tpm: null, scopes: ['llm'], attributes: '{}', expiresAt: null,
    });
  const stored = async (keyId: string) =>
    (await db.dataSource.manager.find(VirtualKeyRemoval, { where: { keyId }, order: { keyHash: 'ASC' } })).map((r) => [r.keyHash, r.dueAt.getTime()]);

  beforeAll(async () => {
    db = await openRepositoryDatabase();
    removals = new VirtualKeyRemovalsRepository();
    keys = new VirtualKeysRepository(db.dataSource);
    await db.dataSource.query(`INSERT INTO organizations (id) VALUES ('org_r')`);
    await db.dataSource.query(`INSERT INTO workspaces (id, org_id, slug, env) VALUES ($1, 'org_r', 'r', 'dev')`, [ws]);
  });
  afterAll(() => db.close());

  it('schedules removals; a digest scheduled again keeps the earlier due time', async () => {
    const key = await mint();
    const [h1, h2] = [hex(), hex()].sort();
    const t0 = new Date('2030-01-01T00:00:00.000Z');
    const t1 = new Date('2030-01-02T00:00:00.000Z');
    await removals.schedule(db.dataSource.manager, key.id, ws, [[h1, t1], [h2, t1]]);
    await removals.schedule(db.dataSource.manager, key.id, ws, [[h1, t0]]);
    await removals.schedule(db.dataSource.manager, key.id, ws, [[h2, new Date('2031-01-01T00:00:00.000Z')]]);
    expect(await stored(key.id)).toEqual([[h1, t0.getTime()], [h2, t1.getTime()]]);
  });

  it('brings every removal of a key forward, never later', async () => {
    const key = await mint();
    const [h1, h2] = [hex(), hex()].sort();
    const early = new Date('2029-01-01T00:00:00.000Z');
    await removals.schedule(db.dataSource.manager, key.id, ws, [[h1, early], [h2, new Date('2032-01-01T00:00:00.000Z')]]);
    const at = new Date('2030-06-01T00:00:00.000Z');
    await removals.bringForward(db.dataSource.manager, key.id, at);
    expect(await stored(key.id)).toEqual([[h1, early.getTime()], [h2, at.getTime()]]);
  });

  it('locks the due removals (database clock) by digest, and deletes the settled ones', async () => {
    const key = await mint();
    const [h1, h2, h3] = [hex(), hex(), hex()].sort();
    const past = new Date(Date.now() - 60_000);
    await removals.schedule(db.dataSource.manager, key.id, ws, [[h3, past], [h1, past], [h2, new Date(Date.now() + 60_000)]]);
    const lockDue = (keyId: string) => db.dataSource.transaction((m) => removals.lockDue(m, keyId));
    expect(await lockDue(key.id)).toEqual([h1, h3]);
    expect(await lockDue('key_none')).toEqual([]);
    // Locked: a second transaction skips nothing and waits; here, it times out.
    await db.dataSource.transaction(async (m) => {
      await removals.lockDue(m, key.id);
      const blocked = db.dataSource.transaction(async (m2) => {
        await m2.query(`SET LOCAL lock_timeout = '200ms'`);
        return removals.lockDue(m2, key.id);
      });
      await expect(blocked).rejects.toThrow(/lock timeout/);
    });
    await removals.delete(db.dataSource.manager, key.id, []);
    await removals.delete(db.dataSource.manager, key.id, [h1, h3]);
    expect((await stored(key.id)).map(([h]) => h)).toEqual([h2]);
  });

  it('listens, loads the pending digests, and gets its markers back on a client of its own', async () => {
    const url = (db.dataSource.options as { url: string }).url;
    const client = new Client({ connectionString: url });
    await client.connect();
    try {
      const received: Notification[] = [];
      client.on('notification', (m) => received.push(m));
      await removals.listen(client, 'marker_spec');
      const key = await mint();
      const digest = hex();
      await removals.schedule(db.dataSource.manager, key.id, ws, [[digest, new Date()]]);
      const rows = await removals.pendingDigests(client);
      expect(rows).toContainEqual({ kind: 'k', key_id: key.id, digest: key.key_hash, previous: null });
      expect(rows).toContainEqual({ kind: 'r', key_id: null, digest, previous: null });
      await removals.mark(client, 'marker_spec', 7);
      for (let i = 0; i < 50 && !received.some((m) => m.channel === 'marker_spec'); i++) await new Promise((r) => setTimeout(r, 20));
      expect(received.map((m) => [m.channel, m.payload])).toEqual([
        ['virtual_key_hot_path', `k ${key.id} 1 ${key.key_hash}`],
        ['virtual_key_hot_path', `r ${digest} 1`],
        ['marker_spec', '7'],
      ]);
    } finally {
      await client.end();
    }
  });
});
