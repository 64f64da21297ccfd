import { randomBytes } from 'node:crypto';
import { signServiceToken } from 'src/platform/auth/service-token';
import { WebhookEvidenceService, UNMATCHED_RETENTION_MS } from 'src/modules/webhooks/webhook-evidence.service';
import { bearer, Operator, SERVICE_SECRET, startTestApp, TestApp } from 'test/support/app';
import { GatewayEmulator } from 'test/support/gateway-emulator';
import { GatewayStreams, receiptRevision } from 'test/support/streams';

const EVALUATE = '/internal/v1/evidence/evaluate';
const hex = (n: number) => randomBytes(n).toString('hex');

describe('webhook evidence (POST /internal/v1/workspaces/{ws}/webhook-evidence)', () => {
  let gw: GatewayEmulator;
  let t: TestApp;
  let streams: GatewayStreams;
  let owner: Operator;
  let ws: string;
  let connectionId: string;
  let service: WebhookEvidenceService;
  const subscriptionId = 'wsub_orders';

  const serviceToken = () => signServiceToken(SERVICE_SECRET, 'gateway', 'control');
  const path = (workspaceId = ws) => `/internal/v1/workspaces/${workspaceId}/webhook-evidence`;
  const post = async (body: object, workspaceId = ws) =>
    t.http().post(path(workspaceId)).set('Authorization', `Bearer ${await serviceToken()}`).send(body);

  /** A verified evidence event as the gateway sends it. */
  const evidence = (overrides: Record<string, unknown> = {}) => ({
    schema_version: 1,
    evidence_id: `evd_${hex(12)}`,
    workspace_id: ws,
    connection_id: connectionId,
    subscription_id: subscriptionId,
    event_type: 'charge.succeeded',
    provider_event_id: `evt_${hex(8)}`,
    upstream_id: `ch_${hex(8)}`,
    trust: 'vendor_signed',
    signature_profile: 'vendor_a_v1',
    key_version: 2,
    body_digest: hex(32),
    batch_position: null,
    results: [{ name: 'amount_matches', outcome: 'passed', trust: 'vendor_signed' }],
    received_at: new Date().toISOString(),
    ...overrides,
  });

  /** A receipt awaiting evidence for `upstreamId` on the subscription, projected through the receipts stream. */
  const receipt = async (upstreamId: string, overrides: Record<string, unknown> = {}) => {
    const at = new Date().toISOString();
    const revision = receiptRevision(ws, {
      connection_id: connectionId,
      upstream_id: upstreamId,
      verification_method: 'staged_plan',
      verification_state: 'pending',
      occurred_at: at,
      updated_at: at,
      idempotency_key: null,
      envelope: { verification: { expected_evidence: [{ subscription_id: subscriptionId, event_type: 'charge.succeeded', stage: 'persisted' }] } },
      ...overrides,
    });
    await streams.add('receipts', revision);
    await streams.pass('receipts');
    return revision.receipt_id;
  };

  const row = async (evidenceId: string) => {
    const [r] = await t.db.query(`SELECT * FROM webhook_evidence WHERE evidence_id = $1`, [evidenceId]);
    return r;
  };

  beforeAll(async () => {
    gw = await GatewayEmulator.start();
    t = await startTestApp({ GATEWAY_URL: gw.url });
    streams = new GatewayStreams(t);
    service = t.app.get(WebhookEvidenceService);
    owner = await t.signIn();
    ws = owner.workspaceId;
    const res = await t.http().post(`/api/v1/workspaces/${ws}/connections`).set(bearer(owner)).send({ slug: 'stripe', source: 'native' }).expect(200);
    connectionId = res.body.connection.connection_id;
  });
  afterAll(async () => {
    streams.close();
    await t.close();
    await gw.stop();
  });
  beforeEach(() => gw.reset());

  describe('authentication', () => {
    it('answers 401 without a service token and for an operator session, and writes nothing', async () => {
      const body = evidence();
      const none = await t.http().post(path()).send(body);
      expect(none.status).toBe(401);
      expect(none.body).toEqual({ detail: 'service token not accepted' });
      const session = await t.http().post(path()).set(bearer(owner)).send(body);
      expect(session.status).toBe(401);
      const wrongDirection = await t.http().post(path()).set('Authorization', `Bearer ${await signServiceToken(SERVICE_SECRET, 'control', 'gateway')}`).send(body);
      expect(wrongDirection.status).toBe(401);
      expect(await row(body.evidence_id)).toBeUndefined();
    });
  });

  describe('persistence', () => {
    it('records the immutable event without a raw body, answers 201 and hands the reference to the gateway', async () => {
      const body = evidence({ batch_position: 3, idempotency_key: 'idem-42' });
      const res = await post(body);
      expect(res.status).toBe(201);
      expect(res.body).toEqual({ ...body, correlation: { state: 'unmatched', receipt_id: null, stage: null } });
      const stored = await row(body.evidence_id);
      expect(stored).toMatchObject({ workspace_id: ws, connection_id: connectionId, body_digest: body.body_digest, batch_position: 3, correlation: 'unmatched' });
      expect(Object.keys(stored)).not.toEqual(expect.arrayContaining(['body']));
      expect(Object.keys(stored).some((column) => /raw|payload/.test(column))).toBe(false);
      expect(gw.callsTo(EVALUATE).map((c) => c.body)).toEqual([{ workspace_id: ws, evidence_id: body.evidence_id, receipt_id: null }]);
      expect(stored.evaluation_pending).toBe(false);
    });

    it('is idempotent on evidence_id: a repeat answers 200 with the same document and changes nothing', async () => {
      const body = evidence();
      const first = await post(body);
      expect(first.status).toBe(201);
      const again = await post(body);
      expect(again.status).toBe(200);
      expect(again.body).toEqual(first.body);
      const [{ n }] = await t.db.query(`SELECT count(*)::int AS n FROM webhook_evidence WHERE evidence_id = $1`, [body.evidence_id]);
      expect(n).toBe(1);
      expect(gw.callsTo(EVALUATE)).toHaveLength(1);
    });

    it('refuses the same evidence_id with different content (409) and keeps the first event', async () => {
      const body = evidence();
      await post(body).then((r) => expect(r.status).toBe(201));
      const res = await post({ ...body, body_digest: hex(32) });
      expect(res.status).toBe(409);
      expect(res.body).toEqual({ detail: 'evidence_id already recorded with different content' });
      expect((await row(body.evidence_id)).body_digest).toBe(body.body_digest);
    });

    it('records concurrent deliveries of one evidence_id exactly once', async () => {
      const body = evidence();
      const results = await Promise.all([post(body), post(body), post(body)]);
      expect(results.map((r) => r.status).sort()).toEqual([200, 200, 201]);
      const [{ n }] = await t.db.query(`SELECT count(*)::int AS n FROM webhook_evidence WHERE evidence_id = $1`, [body.evidence_id]);
      expect(n).toBe(1);
      expect(gw.callsTo(EVALUATE)).toHaveLength(1);
    });

    it('answers 404 for an unknown workspace and for a connection of another workspace', async () => {
      const missing = await post(evidence({ workspace_id: 'ws_missing' }), 'ws_missing');
      expect(missing.status).toBe(404);
      expect(missing.body).toEqual({ detail: 'workspace not found' });
      const other = await t.signIn();
      const res = await post(evidence({ workspace_id: other.workspaceId }), other.workspaceId);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ detail: 'connection not found' });
    });

    it('keeps the evidence when the evaluation hand-off fails and retries it later', async () => {
      gw.fail(EVALUATE, 503);
      const body = evidence();
      expect((await post(body)).status).toBe(201);
      expect((await row(body.evidence_id)).evaluation_pending).toBe(true);
      gw.reset();
      expect(await service.retryEvaluations(new Date())).toBe(0); // not due yet
      expect(await service.retryEvaluations(new Date(Date.now() + 120_000))).toBeGreaterThanOrEqual(1);
      expect(gw.callsTo(EVALUATE).map((c) => c.body)).toContainEqual({ workspace_id: ws, evidence_id: body.evidence_id, receipt_id: null });
      expect((await row(body.evidence_id)).evaluation_pending).toBe(false);
    });
  });

  describe('validation', () => {
    const refused = async (body: object, loc: (string | number)[], type?: string) => {
      const res = await post(body);
      expect(res.status).toBe(422);
      expect(res.body.detail).toEqual(expect.arrayContaining([expect.objectContaining({ loc, ...(type ? { type } : {}) })]));
      expect(await row((body as { evidence_id: string }).evidence_id)).toBeUndefined();
    };

    it('refuses missing and unknown fields', async () => {
      const { event_type: _, ...missing } = evidence();
      await refused(missing, ['body', 'event_type'], 'missing');
      await refused({ ...evidence(), raw_body: '{}' }, ['body', 'raw_body'], 'extra_forbidden');
    });

    it('refuses malformed ids, digests, profiles and timestamps', async () => {
      await refused(evidence({ evidence_id: 'evt_123' }), ['body', 'evidence_id']);
      await refused(evidence({ subscription_id: 'sub_1' }), ['body', 'subscription_id']);
      await refused(evidence({ body_digest: 'abc' }), ['body', 'body_digest']);
      await refused(evidence({ signature_profile: 'vendor_z' }), ['body', 'signature_profile'], 'enum');
      await refused(evidence({ received_at: 'yesterday' }), ['body', 'received_at']);
      await refused(evidence({ upstream_id: 'has space' }), ['body', 'upstream_id']);
      await refused(evidence({ schema_version: 2 }), ['body', 'schema_version']);
      await refused(evidence({ results: [{ name: 'x', outcome: 'maybe', trust: 'vendor_signed' }] }), ['body', 'results', 0, 'outcome'], 'enum');
    });

    it('refuses a workspace_id that is not the path workspace', async () => {
      await refused(evidence({ workspace_id: 'ws_other' }), ['body', 'workspace_id']);
    });

    it('never promotes broker evidence: trust must be the profile trust, results never exceed the event', async () => {
      await refused(evidence({ signature_profile: 'broker_a_sha256', trust: 'vendor_signed' }), ['body', 'trust']);
      await refused(
        evidence({ signature_profile: 'broker_a_sha256', trust: 'broker_attested', results: [{ name: 'x', outcome: 'passed', trust: 'vendor_signed' }] }),
        ['body', 'results', 0, 'trust'],
      );
    });
  });

  describe('correlation', () => {
    it('zero candidates: stays unmatched', async () => {
      const res = await post(evidence());
      expect(res.status).toBe(201);
      expect(res.body.correlation).toEqual({ state: 'unmatched', receipt_id: null, stage: null });
    });

    it('one candidate: matched to that receipt and sent with it; the receipt itself is untouched', async () => {
      const upstream = `ch_${hex(8)}`;
      const receiptId = await receipt(upstream);
      const [before] = await t.db.query(`SELECT * FROM receipt_heads WHERE receipt_id = $1`, [receiptId]);
      const body = evidence({ upstream_id: upstream });
      const res = await post(body);
      expect(res.status).toBe(201);
      expect(res.body.correlation).toEqual({ state: 'matched', receipt_id: receiptId, stage: 'persisted' });
      expect(gw.callsTo(EVALUATE).map((c) => c.body)).toEqual([{ workspace_id: ws, evidence_id: body.evidence_id, receipt_id: receiptId }]);
      const [after] = await t.db.query(`SELECT * FROM receipt_heads WHERE receipt_id = $1`, [receiptId]);
      expect(after).toEqual(before);
    });

    it('two candidates: ambiguous evidence stays unmatched', async () => {
      const upstream = `ch_${hex(8)}`;
      await receipt(upstream);
      await receipt(upstream);
      const res = await post(evidence({ upstream_id: upstream }));
      expect(res.body.correlation).toEqual({ state: 'ambiguous', receipt_id: null, stage: null });
      expect(gw.callsTo(EVALUATE)[0].body.receipt_id).toBeNull();
    });

    it('a reflected idempotency key narrows two candidates to one', async () => {
      const upstream = `ch_${hex(8)}`;
      const wanted = await receipt(upstream, { idempotency_key: 'idem-a' });
      await receipt(upstream, { idempotency_key: 'idem-b' });
      const res = await post(evidence({ upstream_id: upstream, idempotency_key: 'idem-a' }));
      expect(res.body.correlation).toMatchObject({ state: 'matched', receipt_id: wanted });
    });

    it('an idempotency key never replaces the upstream id', async () => {
      const upstream = `ch_${hex(8)}`;
      await receipt(upstream, { idempotency_key: 'idem-only' });
      const res = await post(evidence({ upstream_id: null, idempotency_key: 'idem-only' }));
      expect(res.body.correlation.state).toBe('unmatched');
    });

    it('a reflected idempotency key that no candidate carries leaves the evidence unmatched', async () => {
      const upstream = `ch_${hex(8)}`;
      await receipt(upstream, { idempotency_key: 'idem-x' });
      const res = await post(evidence({ upstream_id: upstream, idempotency_key: 'idem-y' }));
      expect(res.body.correlation.state).toBe('unmatched');
    });

    it('matches only receipts awaiting this subscription, event type and connection with a pending plan', async () => {
      const upstream = `ch_${hex(8)}`;
      await receipt(upstream, { envelope: { verification: { expected_evidence: [{ subscription_id: 'wsub_other', event_type: 'charge.succeeded', stage: 'persisted' }] } } });
      await receipt(upstream, { envelope: { verification: { expected_evidence: [{ subscription_id: subscriptionId, event_type: 'charge.refunded', stage: 'persisted' }] } } });
      await receipt(upstream, { verification_state: 'verified' });
      await receipt(upstream, { connection_id: 'conn_elsewhere' });
      await receipt(upstream, { envelope: null });
      const res = await post(evidence({ upstream_id: upstream }));
      expect(res.body.correlation.state).toBe('unmatched');
    });

    it('never correlates across workspaces', async () => {
      const upstream = `ch_${hex(8)}`;
      const other = await t.signIn();
      const revision = receiptRevision(other.workspaceId, {
        connection_id: connectionId,
        upstream_id: upstream,
        verification_method: 'staged_plan',
        verification_state: 'pending',
        occurred_at: new Date().toISOString(),
        envelope: { verification: { expected_evidence: [{ subscription_id: subscriptionId, event_type: 'charge.succeeded', stage: 'persisted' }] } },
      });
      await streams.add('receipts', revision);
      await streams.pass('receipts');
      const res = await post(evidence({ upstream_id: upstream }));
      expect(res.body.correlation.state).toBe('unmatched');
    });

    it('out of order: evidence received before its receipt is matched by the next correlation pass', async () => {
      const upstream = `ch_${hex(8)}`;
      const body = evidence({ upstream_id: upstream });
      expect((await post(body)).body.correlation.state).toBe('unmatched');
      const receiptId = await receipt(upstream);
      gw.reset();
      expect(await service.recorrelate()).toBeGreaterThanOrEqual(1);
      expect(await row(body.evidence_id)).toMatchObject({ correlation: 'matched', receipt_id: receiptId, stage: 'persisted', evaluation_pending: false });
      expect(gw.callsTo(EVALUATE).map((c) => c.body)).toContainEqual({ workspace_id: ws, evidence_id: body.evidence_id, receipt_id: receiptId });
    });

    it('ambiguous evidence stays unmatched on later passes', async () => {
      const upstream = `ch_${hex(8)}`;
      await receipt(upstream);
      await receipt(upstream);
      const body = evidence({ upstream_id: upstream });
      await post(body);
      await service.recorrelate();
      expect(await row(body.evidence_id)).toMatchObject({ correlation: 'ambiguous', receipt_id: null });
    });
  });

  describe('retention', () => {
    it('expires unmatched evidence after the plan and late-reconciliation deadlines, keeps matched evidence', async () => {
      const upstream = `ch_${hex(8)}`;
      await receipt(upstream);
      const receivedAt = new Date();
      const matched = evidence({ upstream_id: upstream, received_at: receivedAt.toISOString() });
      const unmatched = evidence({ received_at: receivedAt.toISOString() });
      await post(matched);
      await post(unmatched);
      await service.expire(new Date(receivedAt.getTime() + UNMATCHED_RETENTION_MS - 1));
      expect(await row(unmatched.evidence_id)).toBeDefined();
      await service.expire(new Date(receivedAt.getTime() + UNMATCHED_RETENTION_MS + 1));
      expect(await row(unmatched.evidence_id)).toBeUndefined();
      expect(await row(matched.evidence_id)).toMatchObject({ correlation: 'matched' });
    });
  });
});
