import { canonicalParts, GENESIS_HASH, linkHash, toChainedRow } from 'src/common/crypto/audit-chain';
import { AuditChainRepository } from 'src/modules/audit/audit-chain.repository';
import { AuditEventsRepository, TRAIL_BATCH } from 'src/modules/audit/audit-events.repository';
import { openRepositoryDatabase, RepositoryDatabase } from 'test/support/repository-database';
import { seedTenant } from 'test/platform/tenancy-seed';

describe('AuditEventsRepository', () => {
  let db: RepositoryDatabase;
  let repo: AuditEventsRepository;
  let chain: AuditChainRepository;
  let n = 0;

  beforeAll(async () => {
    db = await openRepositoryDatabase();
    repo = new AuditEventsRepository(db.dataSource);
    chain = new AuditChainRepository(db.dataSource);
  });
  afterAll(() => db.close());

  /** Appends one row as AuditService.record does, in its own transaction. */
  const append = (workspaceId: string, action = 'key.mint', detail: Record<string, unknown> = {}, target: string | null = null) => {
    const id = `aud_${String(++n).padStart(24, '0')}`;
    const parts = canonicalParts({ workspace_id: workspaceId, event_id: id, actor: { user_id: null, email: null }, action, target, detail });
    return db.dataSource.transaction((m) =>
      repo.append(m, { id, workspaceId, actorUserId: null, actorEmail: null, action, target, detailJson: JSON.stringify(detail), genesisHash: GENESIS_HASH, ...parts }),
    );
  };

  it('appends links 1, 2, 3 from genesis: each chain_hash is the SHA-256 link the verifier recomputes, and the head follows', async () => {
    const { workspaceId } = await seedTenant(db.dataSource);
    const { occurred_at: at } = await append(workspaceId, 'key.mint', { prefix: 'ob_test' }, 'key_a');
    expect(at).toBeInstanceOf(Date);
    await append(workspaceId, 'key.revoke');
    await append(workspaceId, 'policy.publish');
    const rows = await repo.trailBatch(workspaceId, 0, Number.MAX_SAFE_INTEGER);
    expect(rows.map((r) => Number(r.seq))).toEqual([1, 2, 3]);
    let prev = GENESIS_HASH;
    for (const row of rows) {
      prev = linkHash(prev, toChainedRow(row));
      expect(row.chain_hash).toBe(prev);
    }
    expect(await chain.headSeq(workspaceId)).toBe('3');
    expect(await repo.chainHashAt(workspaceId, 2)).toBe(rows[1].chain_hash);
    expect(await repo.chainHashAt(workspaceId, 9)).toBeUndefined();
  });

  it('a rolled-back append leaves no link and no gap', async () => {
    const { workspaceId } = await seedTenant(db.dataSource);
    await append(workspaceId);
    const rolledBack = db.dataSource.transaction(async (m) => {
      const parts = canonicalParts({ workspace_id: workspaceId, event_id: 'aud_rolledback', actor: { user_id: null, email: null }, action: 'key.mint', target: null, detail: {} });
      await repo.append(m, { id: 'aud_rolledback', workspaceId, actorUserId: null, actorEmail: null, action: 'key.mint', target: null, detailJson: '{}', genesisHash: GENESIS_HASH, ...parts });
      throw new Error('rolled back');
    });
    await expect(rolledBack).rejects.toThrow('rolled back');
    await append(workspaceId);
    expect((await repo.trailBatch(workspaceId, 0, 100)).map((r) => Number(r.seq))).toEqual([1, 2]);
  });

  it('serializes concurrent appends of one workspace on its head: seqs without gap or duplicate', async () => {
    const { workspaceId } = await seedTenant(db.dataSource);
    await Promise.all(Array.from({ length: 8 }, () => append(workspaceId)));
    expect((await repo.trailBatch(workspaceId, 0, 100)).map((r) => Number(r.seq))).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it('reads the trail in batches of TRAIL_BATCH within (after, to]', async () => {
    const { workspaceId } = await seedTenant(db.dataSource);
    for (let i = 0; i < 4; i++) await append(workspaceId);
    expect((await repo.trailBatch(workspaceId, 1, 3)).map((r) => Number(r.seq))).toEqual([2, 3]);
    expect(await repo.trailBatch(workspaceId, 4, 100)).toEqual([]);
    expect(TRAIL_BATCH).toBe(1000);
  });

  it('pages the listing newest first on (occurred_at, id) with its filters and keyset position', async () => {
    const { workspaceId } = await seedTenant(db.dataSource);
    await append(workspaceId, 'key.mint', {}, 'key_1');
    await append(workspaceId, 'key.revoke', {}, 'key_1');
    await append(workspaceId, 'key.mint', {}, 'key_2');
    const filter = { workspaceId, from: new Date(Date.now() - 60_000), to: new Date(Date.now() + 60_000), actions: ['key.mint', 'key.revoke'], limit: 10 };
    const all = await repo.page(filter);
    expect(all.map((r) => [r.action, r.target])).toEqual([
      ['key.mint', 'key_2'],
      ['key.revoke', 'key_1'],
      ['key.mint', 'key_1'],
    ]);
    expect(all[0]).not.toHaveProperty('chain_hash');
    expect((await repo.page({ ...filter, action: 'key.mint' })).map((r) => r.target)).toEqual(['key_2', 'key_1']);
    expect((await repo.page({ ...filter, target: 'key_1' })).map((r) => r.action)).toEqual(['key.revoke', 'key.mint']);
    expect(await repo.page({ ...filter, userId: 'usr_nobody' })).toEqual([]);
    expect(await repo.page({ ...filter, actions: ['policy.publish'] })).toEqual([]);
    const after = await repo.page({ ...filter, after: { at: all[0].occurred_at, id: all[0].id }, limit: 1 });
    expect(after.map((r) => r.id)).toEqual([all[1].id]);
  });
});
