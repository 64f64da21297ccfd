import { parseReceiptRevision, ReceiptRevision } from 'src/modules/receipts/receipts.projector';
import { ReceiptsRepository } from 'src/modules/receipts/receipts.repository';
import { EntryReader } from 'src/modules/streams/entry-reader';
import { ReadModelPartitionsRepository } from 'src/modules/streams/read-model-partitions.repository';
import { openRepositoryDatabase, RepositoryDatabase } from 'test/support/repository-database';
import { receiptRevision } from 'test/support/streams';

const AT = '2031-05-10T10:00:00.000Z';
/** A revision as the projector hands it to the repository. */
const revision = (workspaceId: string, overrides: Record<string, unknown> = {}): ReceiptRevision =>
  parseReceiptRevision(EntryReader.parse(JSON.stringify(receiptRevision(workspaceId, { occurred_at: AT, updated_at: AT, ...overrides }))));

describe('ReceiptsRepository', () => {
  let db: RepositoryDatabase;
  let repo: ReceiptsRepository;
  const project = (...revisions: ReceiptRevision[]) => db.dataSource.transaction((m) => repo.project(m, revisions));
  const page = (limit: number, where: string[] = [], values: unknown[] = []) => ({ where, values, limit });

  beforeAll(async () => {
    db = await openRepositoryDatabase();
    repo = new ReceiptsRepository(db.dataSource);
    await new ReadModelPartitionsRepository(db.dataSource).ensure('receipt_revisions', new Date(AT));
  });
  afterAll(() => db.close());

  it('reads nothing of a workspace without receipts', async () => {
    expect(await repo.counter('ws_none')).toBeNull();
    expect(await repo.heads('ws_none', page(10))).toEqual([]);
    expect(await repo.detail('ws_none', 'rcp_x', null)).toBeUndefined();
    expect(await repo.invocationOf('ws_none', 'rcp_x')).toBeNull();
  });

  it('projects revisions: every one kept, the newest as head, the counter grown by new heads only, redelivery a no-op', async () => {
    const first = revision('ws_a', { invocation_id: 'inv_1', receipt_id: 'rcp_1', receipt_revision: 1, state: 'in_flight' });
    const second = revision('ws_a', { invocation_id: 'inv_1', receipt_id: 'rcp_2', receipt_revision: 2, updated_at: '2031-05-10T10:00:05.000Z' });
    await project(first, second);
    await project(first, second);
    // An older revision arriving late does not replace the head; another workspace's same invocation id does not either.
    await project(revision('ws_a', { invocation_id: 'inv_1', receipt_id: 'rcp_0', receipt_revision: 1 }), revision('ws_b', { invocation_id: 'inv_1', receipt_revision: 9 }));
    const heads = await repo.heads('ws_a', page(10));
    expect(heads).toHaveLength(1);
    expect(heads[0]).toMatchObject({ receipt_id: 'rcp_2', receipt_revision: 2, state: 'completed' });
    expect(await repo.counter('ws_a')).toMatchObject({ total: '1', lastAt: new Date(AT) });
    expect(await repo.heads('ws_b', page(10))).toEqual([]);
    expect((await db.dataSource.query(`SELECT count(*)::int AS n FROM receipt_revisions WHERE workspace_id = 'ws_a'`))[0].n).toBe(2);
  });

  it('finds the invocation behind any of its receipt ids, its newest or a named revision, and its revisions newest first', async () => {
    expect(await repo.invocationOf('ws_a', 'rcp_1')).toBe('inv_1');
    expect(await repo.invocationOf('ws_b', 'rcp_1')).toBeNull();
    expect(await repo.detail('ws_a', 'rcp_1', null)).toMatchObject({ receipt_id: 'rcp_2', receipt_revision: 2, idempotency_key: 'idem-1' });
    expect(await repo.detail('ws_a', 'rcp_2', 1)).toMatchObject({ receipt_id: 'rcp_1', receipt_revision: 1, state: 'in_flight' });
    expect(await repo.detail('ws_a', 'rcp_2', 7)).toBeUndefined();
    expect((await repo.revisions('ws_a', 'inv_1', null, 10)).map((r) => r.receipt_revision)).toEqual([2, 1]);
    expect((await repo.revisions('ws_a', 'inv_1', 2, 10)).map((r) => r.receipt_revision)).toEqual([1]);
    expect(await repo.revisions('ws_a', 'inv_1', null, 1)).toHaveLength(1);
  });

  it('pages heads newest first on (occurred_at, receipt_id) with the filters it is given', async () => {
    const times = ['2031-05-10T11:00:00.000Z', '2031-05-10T12:00:00.000Z', '2031-05-10T12:00:00.000Z'];
    await project(...times.map((at, i) => revision('ws_p', { invocation_id: `inv_p${i}`, receipt_id: `rcp_p${i}`, occurred_at: at, decision: i === 0 ? 'deny' : 'allow' })));
    expect((await repo.heads('ws_p', page(10))).map((r) => r.receipt_id)).toEqual(['rcp_p2', 'rcp_p1', 'rcp_p0']);
    expect((await repo.heads('ws_p', page(10, ['(occurred_at, receipt_id) < ($2, $3)'], [new Date(times[2]), 'rcp_p2']))).map((r) => r.receipt_id)).toEqual(['rcp_p1', 'rcp_p0']);
    expect((await repo.heads('ws_p', page(10, [`decision = 'deny'`]))).map((r) => r.receipt_id)).toEqual(['rcp_p0']);
    expect(await repo.heads('ws_p', page(2))).toHaveLength(2);
  });

  it('retains at most `limit` heads older than the cutoff and takes them off the counter', async () => {
    await project(...[0, 1, 2].map((i) => revision('ws_r', { invocation_id: `inv_r${i}`, occurred_at: `2031-05-0${i + 1}T00:00:00.000Z` })));
    const retain = (limit: number) => db.dataSource.transaction((m) => repo.retain(m, 'ws_r', new Date('2031-05-03T00:00:00Z'), limit));
    expect(await retain(1)).toBe(1);
    expect(await retain(5)).toBe(1);
    expect(await retain(5)).toBe(0);
    expect(await repo.counter('ws_r')).toMatchObject({ total: '1' });
    expect((await repo.heads('ws_r', page(10))).map((r) => r.invocation_id)).toEqual(['inv_r2']);
  });
});
