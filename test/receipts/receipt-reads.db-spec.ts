import { DataSource } from 'typeorm';
import { ReceiptReadsRepository } from 'src/modules/receipts/receipt-reads.repository';
import { openRepositoryDatabase, RepositoryDatabase } from 'test/support/repository-database';

/** The reads receipts offers policy replay and explain, routing and webhook evidence, on receipts seeded straight into the read model. */
describe('ReceiptReadsRepository', () => {
  let db: RepositoryDatabase;
  let ds: DataSource;
  let reads: ReceiptReadsRepository;
  const base = Date.parse('2026-03-10T12:00:00.000Z');
  const at = (s: number) => new Date(base + s * 1000);

  interface Revision {
    ws?: string;
    inv: string;
    rev?: number;
    rcp?: string;
    at: Date;
    envelope?: unknown;
    connection?: string | null;
    upstream?: string | null;
    method?: string;
    vstate?: string;
    idem?: string | null;
    head?: boolean;
  }

  /** One revision row, and (by default) the head pointing at it. */
  async function seed(r: Revision): Promise<void> {
    const values = [
      r.ws ?? 'ws_a', r.inv, r.rev ?? 1, r.rcp ?? `rcp_${r.inv}`, r.connection ?? null, r.upstream ?? null, r.method ?? 'none', r.vstate ?? 'not_required',
      r.at, r.idem ?? null, r.envelope === undefined ? null : JSON.stringify(r.envelope),
    ];
    await ds.query(
      `INSERT INTO receipt_revisions (workspace_id, invocation_id, receipt_revision, receipt_id, tool, key_id, connection_id, upstream_id, state, decision,
         dispatch_state, evidence_trust, verification_state, verification_method, attempt_count, occurred_at, updated_at, idempotency_key, envelope)
       VALUES ($1, $2, $3, $4, 'tool_x', 'key_x', $5, $6, 'completed', 'allow', 'accepted', 'gateway_observed', $8, $7, 1, $9, $9, $10, $11)`,
      values,
    );
    if (r.head === false) return;
    await ds.query(
      `INSERT INTO receipt_heads (invocation_id, workspace_id, receipt_id, receipt_revision, tool, key_id, connection_id, upstream_id, state, decision,
         dispatch_state, evidence_trust, verification_state, verification_method, attempt_count, occurred_at, updated_at)
       VALUES ($2, $1, $4, $3, 'tool_x', 'key_x', $5, $6, 'completed', 'allow', 'accepted', 'gateway_observed', $8, $7, 1, $9, $9)
       ON CONFLICT (invocation_id) DO UPDATE SET receipt_revision = EXCLUDED.receipt_revision, verification_state = EXCLUDED.verification_state`,
      values.slice(0, 9),
    );
  }

  const auth = (decision: string) => ({ authorization: { principal: { type: 'P', id: 'p' }, decision } });

  beforeAll(async () => {
    db = await openRepositoryDatabase();
    ds = db.dataSource;
    reads = new ReceiptReadsRepository(ds);
    await ds.query(`SELECT read_model_ensure_partition('receipt_revisions', $1::date)`, ['2026-03-01']);
  });
  afterAll(() => db.close());

  describe('recorded decisions (policy replay)', () => {
    beforeAll(async () => {
      // inv_1: two revisions with a request; the newest one is read. inv_2: no request. inv_3, inv_4 at the same time: receipt id breaks the tie.
      await seed({ inv: 'r1', rev: 1, at: at(1), envelope: auth('allow'), head: false });
      await seed({ inv: 'r1', rev: 2, at: at(1), envelope: auth('deny') });
      await seed({ inv: 'r2', at: at(2), envelope: { other: true } });
      await seed({ inv: 'r3', at: at(3), envelope: auth('allow') });
      await seed({ inv: 'r4', at: at(3), envelope: auth('deny') });
      await seed({ ws: 'ws_b', inv: 'rb', at: at(3), envelope: auth('allow') });
    });

    const page = (from: Date, atPos: Date, id: string, limit: number) =>
      ds.transaction((manager) => reads.recordedDecisions(manager, { workspaceId: 'ws_a', from, at: atPos, id, limit }, 30_000));

    it('reads each invocation newest first, its newest revision carrying a request, this workspace only', async () => {
      const rows = await page(at(0), at(10), '', 10);
      expect(rows.map((r) => [r.receipt_id, (r.authorization as { decision: string }).decision])).toEqual([
        ['rcp_r4', 'deny'],
        ['rcp_r3', 'allow'],
        ['rcp_r1', 'deny'],
      ]);
      expect(rows[0]).toMatchObject({ key_id: 'key_x', tool: 'tool_x', occurred_at: at(3) });
    });

    it('pages on (occurred_at, receipt_id) before the position, within the limit and the window', async () => {
      const first = await page(at(0), at(10), '', 1);
      expect(first.map((r) => r.receipt_id)).toEqual(['rcp_r4']);
      const next = await page(at(0), first[0].occurred_at, first[0].receipt_id, 5);
      expect(next.map((r) => r.receipt_id)).toEqual(['rcp_r3', 'rcp_r1']);
      expect(await page(at(2), at(10), '', 5)).toHaveLength(2);
      expect(await page(at(5), at(10), '', 5)).toEqual([]);
    });

    it('counts the newest receipts of [from, to) none of whose revisions carries a request', async () => {
      expect(await reads.countWithoutRequest('ws_a', at(0), at(10), 10)).toBe(1);
      // Only the newest 2 heads (r4, r3) are probed.
      expect(await reads.countWithoutRequest('ws_a', at(0), at(10), 2)).toBe(0);
      expect(await reads.countWithoutRequest('ws_a', at(0), at(2), 10)).toBe(0);
      expect(await reads.countWithoutRequest('ws_none', at(0), at(10), 10)).toBe(0);
    });

    it('reads the recorded request of a receipt by id (undefined when unknown, null authorization when none)', async () => {
      expect(await reads.authorizationOf('ws_a', 'rcp_r3')).toEqual({ authorization: auth('allow').authorization });
      expect(await reads.authorizationOf('ws_a', 'rcp_r2')).toEqual({ authorization: null });
      expect(await reads.authorizationOf('ws_b', 'rcp_r3')).toBeUndefined();
      expect(await reads.authorizationOf('ws_a', 'rcp_none')).toBeUndefined();
    });
  });

  describe('route decisions (routing)', () => {
    const route = (capability: string) => ({ route: { capability, target: 't' } });
    beforeAll(async () => {
      await seed({ ws: 'ws_r', inv: 'd1', at: at(1), envelope: route('cap.a') });
      await seed({ ws: 'ws_r', inv: 'd2', at: at(2), envelope: route('cap.b') });
      await seed({ ws: 'ws_r', inv: 'd3', at: at(2), envelope: route('cap.a') });
      await seed({ ws: 'ws_r', inv: 'd4', at: at(3), envelope: { route: 'not an object' } });
      await seed({ ws: 'ws_r', inv: 'd5', at: at(4) });
    });

    it('lists heads whose revision carries a route object, newest first, ties by receipt id', async () => {
      const rows = await reads.routeDecisions('ws_r', { limit: 10 });
      expect(rows.map((r) => r.receipt_id)).toEqual(['rcp_d3', 'rcp_d2', 'rcp_d1']);
      const route0 = route('cap.a').route;
      expect(rows[0]).toMatchObject({ occurred_at: at(2), state: 'completed', decision: 'allow', evidence_trust: 'gateway_observed', route: route0 });
    });

    it('filters on the capability and pages by keyset or by time, within the limit', async () => {
      expect((await reads.routeDecisions('ws_r', { capability: 'cap.a', limit: 10 })).map((r) => r.receipt_id)).toEqual(['rcp_d3', 'rcp_d1']);
      expect((await reads.routeDecisions('ws_r', { before: { kind: 'keyset', at: at(2), id: 'rcp_d3' }, limit: 10 })).map((r) => r.receipt_id)).toEqual([
        'rcp_d2',
        'rcp_d1',
      ]);
      expect((await reads.routeDecisions('ws_r', { before: { kind: 'time', before: at(2) }, limit: 10 })).map((r) => r.receipt_id)).toEqual(['rcp_d1']);
      expect((await reads.routeDecisions('ws_r', { limit: 1 })).map((r) => r.receipt_id)).toEqual(['rcp_d3']);
      expect(await reads.routeDecisions('ws_none', { limit: 10 })).toEqual([]);
    });
  });

  describe('receipts awaiting evidence (webhooks)', () => {
    const expecting = (stage: unknown, subscription = 'wsub_1') => ({
      verification: {
        expected_evidence: [
          { subscription_id: 'wsub_other', event_type: 'e', stage: 'x' },
          { subscription_id: subscription, event_type: 'e', stage },
        ],
      },
    });
    const staged = { connection: 'con_1', upstream: 'up_1', method: 'staged_plan', vstate: 'pending' };
    const key = { workspace_id: 'ws_e', connection_id: 'con_1', upstream_id: 'up_1', subscription_id: 'wsub_1', event_type: 'e', idempotency_key: null };
    beforeAll(async () => {
      await seed({ ws: 'ws_e', inv: 'e1', at: at(1), envelope: expecting('settled'), idem: 'idem_1', ...staged });
      await seed({ ws: 'ws_e', inv: 'e2', at: at(2), envelope: expecting('settled'), idem: 'idem_2', ...staged });
      await seed({ ws: 'ws_e', inv: 'e3', at: at(3), envelope: expecting(7), ...staged }); // a stage that is not a string
      await seed({ ws: 'ws_e', inv: 'e4', at: at(4), envelope: expecting('settled'), ...staged, vstate: 'verified' });
      await seed({ ws: 'ws_e', inv: 'e5', at: at(5), envelope: { verification: { expected_evidence: 'not a list' } }, ...staged });
    });

    it('finds pending staged plans expecting the subscription and event at a named stage, two at most, by receipt id', async () => {
      expect(await reads.awaitingEvidence(undefined, key)).toEqual([
        { receipt_id: 'rcp_e1', stage: 'settled' },
        { receipt_id: 'rcp_e2', stage: 'settled' },
      ]);
    });

    it('narrows on a reflected idempotency key, and reads in the caller’s transaction', async () => {
      const rows = await ds.transaction((manager) => reads.awaitingEvidence(manager, { ...key, idempotency_key: 'idem_2' }));
      expect(rows).toEqual([{ receipt_id: 'rcp_e2', stage: 'settled' }]);
      expect(await reads.awaitingEvidence(undefined, { ...key, subscription_id: 'wsub_none' })).toEqual([]);
      expect(await reads.awaitingEvidence(undefined, { ...key, upstream_id: 'up_none' })).toEqual([]);
    });
  });
});
