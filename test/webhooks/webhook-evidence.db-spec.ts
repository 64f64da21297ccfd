import { DataSource } from 'typeorm';
import { EvidenceRow } from 'src/modules/webhooks/dto/evidence.document';
import { WebhookEvidenceRepository } from 'src/modules/webhooks/webhook-evidence.repository';
import { openRepositoryDatabase, RepositoryDatabase } from 'test/support/repository-database';

describe('WebhookEvidenceRepository', () => {
  let db: RepositoryDatabase;
  let ds: DataSource;
  let repo: WebhookEvidenceRepository;
  const WS = 'ws_e';
  const base = Date.parse('2026-03-10T12:00:00.000Z');
  const at = (s: number) => new Date(base + s * 1000);

  const event = (id: string, over: Partial<EvidenceRow> = {}): EvidenceRow => ({
    evidence_id: id,
    workspace_id: WS,
    connection_id: 'con_1',
    subscription_id: 'wsub_1',
    event_type: 'charge.succeeded',
    provider_event_id: `evt_${id}`,
    upstream_id: 'up_1',
    idempotency_key: null,
    trust: 'vendor_signed',
    signature_profile: 'stripe_v1',
    key_version: 1,
    body_digest: 'sha256:00',
    batch_position: null,
    results: [{ name: 'signature', outcome: 'pass', trust: 'vendor_signed' }],
    received_at: at(0),
    content_digest: `digest_${id}`,
    correlation: 'unmatched',
    receipt_id: null,
    stage: null,
    ...over,
  });
  const record = (row: EvidenceRow, retryMs = 60_000) => ds.transaction((m) => repo.insertIfAbsent(m, row, retryMs));
  const stored = async (id: string) =>
    (await ds.query(`SELECT evaluation_pending, evaluate_after, correlation, receipt_id, stage FROM webhook_evidence WHERE evidence_id = $1`, [id]))[0];

  beforeAll(async () => {
    db = await openRepositoryDatabase();
    ds = db.dataSource;
    repo = new WebhookEvidenceRepository(ds);
    await ds.query(`INSERT INTO organizations (id) VALUES ('org_e')`);
    await ds.query(`INSERT INTO workspaces (id, org_id, slug, env) VALUES ($1, 'org_e', 'e', 'dev')`, [WS]);
  });
  afterAll(() => db.close());

  it('records an event once: the row as written, then undefined for a repeat (nothing written)', async () => {
    const row = event('ev_1', { correlation: 'matched', receipt_id: 'rcp_1', stage: 'settled', idempotency_key: 'idem', batch_position: 3 });
    const before = Date.now();
    expect(await record(row)).toEqual(row);
    expect(await record({ ...row, content_digest: 'other' })).toBeUndefined();
    expect(await ds.transaction((m) => repo.find(m, 'ev_1'))).toEqual(row);
    expect(await repo.find(ds.manager, 'ev_none')).toBeUndefined();
    const written = await stored('ev_1');
    expect(written.evaluation_pending).toBe(true);
    // Due a minute after recording, on the database clock.
    expect(written.evaluate_after.getTime()).toBeGreaterThanOrEqual(before + 60_000 - 5_000);
  });

  it('reads a pending hand-off and marks it evaluated only for the receipt it was read with', async () => {
    await record(event('ev_2', { correlation: 'matched', receipt_id: 'rcp_2', stage: 's' }));
    expect(await repo.pendingEvaluation('ev_2')).toEqual({ workspaceId: WS, receiptId: 'rcp_2' });
    await repo.markEvaluated('ev_2', 'rcp_other');
    expect((await stored('ev_2')).evaluation_pending).toBe(true);
    await repo.markEvaluated('ev_2', 'rcp_2');
    expect(await repo.pendingEvaluation('ev_2')).toBeNull();
    // An unmatched event (receipt null) is marked with null.
    await record(event('ev_3'));
    expect(await repo.pendingEvaluation('ev_3')).toEqual({ workspaceId: WS, receiptId: null });
    await repo.markEvaluated('ev_3', null);
    expect(await repo.pendingEvaluation('ev_3')).toBeNull();
    expect(await repo.pendingEvaluation('ev_none')).toBeNull();
  });

  it('claims due hand-offs oldest first, pushing each back, and skips rows another transaction holds', async () => {
    await ds.query(`UPDATE webhook_evidence SET evaluation_pending = false`);
    await record(event('ev_c1', { correlation: 'matched', receipt_id: 'r', stage: 's' }), -60_000);
    await record(event('ev_c2', { correlation: 'matched', receipt_id: 'r', stage: 's' }), -120_000);
    await record(event('ev_c3', { correlation: 'matched', receipt_id: 'r', stage: 's' }), 600_000);
    const now = new Date();
    expect(await repo.claimDue(now, 1, 60_000)).toEqual(['ev_c2']);
    expect((await stored('ev_c2')).evaluate_after).toEqual(new Date(now.getTime() + 60_000));
    expect(await repo.claimDue(now, 10, 60_000)).toEqual(['ev_c1']);
    expect(await repo.claimDue(now, 10, 60_000)).toEqual([]);

    await ds.query(`UPDATE webhook_evidence SET evaluate_after = $1 WHERE evidence_id IN ('ev_c1', 'ev_c2')`, [at(-100)]);
    const runner = ds.createQueryRunner();
    await runner.connect();
    await runner.startTransaction();
    try {
      await runner.query(`SELECT 1 FROM webhook_evidence WHERE evidence_id = 'ev_c2' FOR UPDATE`);
      expect(await repo.claimDue(new Date(), 10, 60_000)).toEqual(['ev_c1']);
    } finally {
      await runner.rollbackTransaction();
      await runner.release();
    }
  });

  it('pages unmatched and ambiguous evidence on (received_at, evidence_id), correlates only what is still unmatched, and expires it', async () => {
    await ds.query(`DELETE FROM webhook_evidence`);
    await record(event('ev_u2', { received_at: at(2) }));
    await record(event('ev_u1', { received_at: at(1) }));
    await record(event('ev_u1b', { received_at: at(1) }));
    await record(event('ev_a', { received_at: at(3), correlation: 'ambiguous' }));
    await record(event('ev_m', { received_at: at(3), correlation: 'matched', receipt_id: 'r', stage: 's' }));
    expect((await repo.unmatchedAfter(at(0), '', 10)).map((r) => r.evidence_id)).toEqual(['ev_u1', 'ev_u1b', 'ev_u2', 'ev_a']);
    expect((await repo.unmatchedAfter(at(1), 'ev_u1', 2)).map((r) => r.evidence_id)).toEqual(['ev_u1b', 'ev_u2']);
    expect(await repo.unmatchedAfter(at(3), 'ev_a', 10)).toEqual([]);

    const match = { correlation: 'matched' as const, receipt_id: 'rcp_9', stage: 'settled' };
    await ds.query(`UPDATE webhook_evidence SET evaluation_pending = false WHERE evidence_id = 'ev_u1'`);
    expect(await repo.correlateUnmatched('ev_u1', match, 60_000)).toBe(true);
    expect(await stored('ev_u1')).toMatchObject({ correlation: 'matched', receipt_id: 'rcp_9', stage: 'settled', evaluation_pending: true });
    expect(await repo.correlateUnmatched('ev_u1', match, 60_000)).toBe(false);
    expect(await repo.correlateUnmatched('ev_a', match, 60_000)).toBe(false);
    expect(await repo.correlateUnmatched('ev_u2', { correlation: 'ambiguous', receipt_id: null, stage: null }, 60_000)).toBe(true);
    expect(await stored('ev_u2')).toMatchObject({ correlation: 'ambiguous', evaluation_pending: false });

    // Before at(3): ev_u1b (unmatched) and ev_u2 (ambiguous); matched evidence is kept.
    expect(await repo.expireUnmatched(at(3))).toBe(2);
    expect(await repo.expireUnmatched(at(3))).toBe(0);
    const left: { evidence_id: string }[] = await ds.query(`SELECT evidence_id FROM webhook_evidence ORDER BY evidence_id`);
    expect(left.map((r) => r.evidence_id)).toEqual(['ev_a', 'ev_m', 'ev_u1']);
  });
});
