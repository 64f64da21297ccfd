import { canonicalParts, GENESIS_HASH } from 'src/common/crypto/audit-chain';
import { AuditChainRepository } from 'src/modules/audit/audit-chain.repository';
import { AuditEventsRepository } from 'src/modules/audit/audit-events.repository';
import { openRepositoryDatabase, RepositoryDatabase } from 'test/support/repository-database';
import { seedTenant } from 'test/platform/tenancy-seed';

describe('AuditChainRepository', () => {
  let db: RepositoryDatabase;
  let repo: AuditChainRepository;
  let events: AuditEventsRepository;
  let n = 0;

  beforeAll(async () => {
    db = await openRepositoryDatabase();
    repo = new AuditChainRepository(db.dataSource);
    events = new AuditEventsRepository(db.dataSource);
  });
  afterAll(() => db.close());

  const append = (workspaceId: string) => {
    const id = `aud_chain_${++n}`;
    const parts = canonicalParts({ workspace_id: workspaceId, event_id: id, actor: { user_id: null, email: null }, action: 'key.mint', target: null, detail: {} });
    return db.dataSource.transaction((m) =>
      events.append(m, { id, workspaceId, actorUserId: null, actorEmail: null, action: 'key.mint', target: null, detailJson: '{}', genesisHash: GENESIS_HASH, ...parts }),
    );
  };
  const keep = (workspaceId: string, seq: number, chainHash: string, jws = `jws-${seq}`) => repo.keep({ workspace_id: workspaceId, seq, chain_hash: chainHash, signed_at: new Date(), jws });

  it('lists grown heads until checkpointed; keeps the first checkpoint of a head only (ON CONFLICT DO NOTHING)', async () => {
    const a = (await seedTenant(db.dataSource)).workspaceId;
    const b = (await seedTenant(db.dataSource)).workspaceId;
    expect(await repo.headSeq(a)).toBeUndefined();
    expect(await repo.bounds(a)).toEqual({ head: null, checkpointed: null });
    await append(a);
    await append(a);
    await append(b);
    const grown = await repo.grownHeads();
    expect(grown.filter((h) => h.workspace_id === a || h.workspace_id === b).map((h) => [h.workspace_id, h.seq])).toEqual(
      [
        [a, '2'],
        [b, '1'],
      ].sort((x, y) => (x[0] < y[0] ? -1 : 1)),
    );
    const [head] = await repo.grownHeads(a);
    expect(await keep(a, 2, head.chain_hash)).toBe(true);
    expect(await keep(a, 2, head.chain_hash, 'another replica')).toBe(false);
    expect(await repo.grownHeads(a)).toEqual([]);
    expect((await repo.grownHeads()).map((h) => h.workspace_id)).toContain(b);
    expect(await repo.bounds(a)).toEqual({ head: '2', checkpointed: '2' });
    await append(a);
    expect((await repo.grownHeads(a)).map((h) => h.seq)).toEqual(['3']);
  });

  it('reads checkpoints in (after, to] in seq order', async () => {
    const ws = (await seedTenant(db.dataSource)).workspaceId;
    for (const seq of [1, 2, 5, 9]) await keep(ws, seq, 'f'.repeat(64));
    expect(await repo.checkpointBatch(ws, 1, 9)).toEqual([
      { seq: '2', jws: 'jws-2' },
      { seq: '5', jws: 'jws-5' },
      { seq: '9', jws: 'jws-9' },
    ]);
    expect((await repo.checkpointBatch(ws, 0, Number.MAX_SAFE_INTEGER)).map((c) => c.seq)).toEqual(['1', '2', '5', '9']);
    expect(await repo.checkpointBatch(ws, 9, 20)).toEqual([]);
  });
});
