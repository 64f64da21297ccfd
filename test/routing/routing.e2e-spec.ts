import { monthStart } from 'src/modules/streams/streams.service';
import { decodeReceiptCursor } from 'src/modules/receipts/receipt-cursor';
import { expectAccessMatrix, roleMembers } from 'test/support/access-matrix';
import { bearer, Operator, startTestApp, TestApp } from 'test/support/app';
import { GatewayEmulator } from 'test/support/gateway-emulator';
import { GatewayStreams, receiptRevision, uid } from 'test/support/streams';

/** The 15th of last month, 10:00 UTC: inside retention whatever the date. */
const BASE = new Date(monthStart(new Date(), -1).getTime() + 14 * 86_400_000 + 10 * 3_600_000);
const at = (minutes: number) => new Date(BASE.getTime() + minutes * 60_000).toISOString();

describe('routing views', () => {
  let t: TestApp;
  let gw: GatewayEmulator;
  let streams: GatewayStreams;
  let owner: Operator;

  beforeAll(async () => {
    gw = await GatewayEmulator.start();
    t = await startTestApp({ GATEWAY_URL: gw.url });
    streams = new GatewayStreams(t);
    owner = await t.signIn();
  });
  afterAll(async () => {
    streams.close();
    await t.close();
    await gw.stop();
  });

  const get = (op: Operator, p: string, query: Record<string, string | number> = {}, ws = op.workspaceId) =>
    t.http().get(`/api/v1/workspaces/${ws}${p}`).query(query).set(bearer(op));
  const prodWorkspace = async (op: Operator) =>
    (await t.http().post('/api/v1/workspaces').set(bearer(op)).send({ org_id: op.orgId, slug: uid('prod'), env: 'prod' }).expect(201)).body.id as string;
  /** An active native stripe connection (restricted key sealed by the emulator). */
  const connectStripe = async (op: Operator, ws = op.workspaceId) => {
    const started = await t.http().post(`/api/v1/workspaces/${ws}/connections`).set(bearer(op)).send({ slug: 'stripe', source: 'native' }).expect(200);
    await t.http().post(`/api/v1/workspaces/${ws}/connections/${started.body.connection.connection_id}/restricted-key`).set(bearer(op)).send({ api_key: 'rk_test_0123456789abcd' }).expect(200);
    return started.body.connection.connection_id as string;
  };

  describe('capabilities', () => {
    it('lists every catalog capability sorted by id with env, effect kind, destructive, untrusted floors outside production, declared bindings', async () => {
      const op = await t.signIn();
      const res = await get(op, '/capabilities').expect(200);
      expect(res.body.env).toBe('dev');
      const ids = res.body.capabilities.map((c: { capability_id: string }) => c.capability_id);
      expect(ids).toEqual([...ids].sort());
      expect(ids).toHaveLength(39);
      const refund = res.body.capabilities.find((c: { capability_id: string }) => c.capability_id === 'cap.payment.refund');
      expect(refund).toEqual({
        capability_id: 'cap.payment.refund',
        display_name: expect.any(String),
        description: expect.any(String),
        effect_kind: 'external_side_effect',
        destructive: true,
        evidence_floor: 'untrusted',
        status: 'declared',
        feature_vocabulary: expect.any(Array),
        catalog_bindings: 8,
        active_bindings: 0,
      });
      for (const c of res.body.capabilities) {
        expect(c.evidence_floor).toBe('untrusted');
        expect(c.destructive).toBe(c.effect_kind !== 'read');
        expect(c.catalog_bindings).toBeGreaterThan(0);
      }
    });

    it('sets the production evidence floor by effect kind', async () => {
      const op = await t.signIn();
      const ws = await prodWorkspace(op);
      const res = await get(op, '/capabilities', {}, ws).expect(200);
      expect(res.body.env).toBe('prod');
      const floor: Record<string, string> = { read: 'untrusted', create: 'broker_attested', update: 'broker_attested', delete: 'gateway_observed', external_side_effect: 'gateway_observed' };
      const kinds = new Set<string>();
      for (const c of res.body.capabilities) {
        kinds.add(c.effect_kind);
        expect([c.capability_id, c.evidence_floor]).toEqual([c.capability_id, floor[c.effect_kind]]);
      }
      expect([...kinds].sort()).toEqual(Object.keys(floor).sort());
    });

    it('counts a binding active once the workspace holds an active connection reaching it', async () => {
      const op = await t.signIn();
      await connectStripe(op);
      const caps = (await get(op, '/capabilities').expect(200)).body.capabilities as { capability_id: string; status: string; active_bindings: number }[];
      const byId = Object.fromEntries(caps.map((c) => [c.capability_id, c]));
      expect(byId['cap.payment.list']).toMatchObject({ status: 'active', active_bindings: 1 });
      expect(byId['cap.payment.refund']).toMatchObject({ status: 'active', active_bindings: 1, catalog_bindings: 8 });
      expect(byId['cap.file.delete']).toMatchObject({ status: 'declared', active_bindings: 0 });
    });
  });

  describe('bindings', () => {
    it('answers the capability and its bindings sorted by binding_id, with ceilings ranked against the floor, costs and connection reach', async () => {
      const op = await t.signIn();
      const ws = await prodWorkspace(op);
      await connectStripe(op, ws);
      const res = await get(op, '/capabilities/cap.payment.refund/bindings', {}, ws).expect(200);
      const capability = (await get(op, '/capabilities', {}, ws).expect(200)).body.capabilities.find((c: { capability_id: string }) => c.capability_id === 'cap.payment.refund');
      expect(res.body.capability).toEqual(capability);
      expect(capability).toMatchObject({ evidence_floor: 'gateway_observed', active_bindings: 1 });
      const ids = res.body.bindings.map((b: { binding_id: string }) => b.binding_id);
      expect(ids).toEqual([...ids].sort());
      expect(ids).toHaveLength(8);

      const native = res.body.bindings.find((b: { binding_id: string }) => b.binding_id === 'stripe.create_refund@native');
      expect(native).toEqual({
        binding_id: 'stripe.create_refund@native',
        capability_id: 'cap.payment.refund',
        capability,
        tool: 'stripe.create_refund',
        custody: 'native',
        surface: 'mcp',
        auth_modes: ['api_key'],
        catalog_source: 'native',
        evidence_ceiling: 'gateway_observed',
        meets_evidence_floor: true,
        cost: { base_micros_usd: null, bundled_in_broker: false },
        quality_prior_bps: 8000,
        connected: true,
        coverage: expect.any(Array),
        shared_quota: false,
        idempotency_propagation: 'forwarded',
        status: 'active',
      });
      const broker = res.body.bindings.find((b: { binding_id: string }) => b.binding_id === 'stripe.create_refund@broker_a');
      expect(broker).toMatchObject({
        custody: 'federated',
        catalog_source: 'broker_a',
        evidence_ceiling: 'broker_attested',
        meets_evidence_floor: false,
        cost: { base_micros_usd: null, bundled_in_broker: true },
        connected: false,
        shared_quota: true,
        idempotency_propagation: 'none',
      });
      for (const b of res.body.bindings) {
        expect(b.tool.split('.')[0]).toBe(b.binding_id.split('.')[0]);
        expect(b.cost.base_micros_usd).not.toBe(0);
        if (b.custody === 'federated') expect(['broker_attested', 'untrusted']).toContain(b.evidence_ceiling);
        for (const c of b.coverage) expect(Object.keys(c).sort()).toEqual(['claim', 'feature', 'fidelity']);
      }
    });

    it('ranks a broker ceiling at or above a create floor in production and above every floor outside it', async () => {
      const op = await t.signIn();
      const prod = (await get(op, '/capabilities/cap.issue.create/bindings', {}, await prodWorkspace(op)).expect(200)).body;
      expect(prod.capability.evidence_floor).toBe('broker_attested');
      expect(prod.bindings.every((b: { meets_evidence_floor: boolean }) => b.meets_evidence_floor)).toBe(true);
      const dev = (await get(op, '/capabilities/cap.file.delete/bindings').expect(200)).body;
      expect(dev.bindings.every((b: { meets_evidence_floor: boolean }) => b.meets_evidence_floor)).toBe(true);
    });

    it('answers 404 capability not found and 400 for a malformed capability id', async () => {
      expect((await get(owner, '/capabilities/cap.nope/bindings').expect(404)).body).toEqual({ detail: 'capability not found' });
      for (const id of ['payment.refund', 'cap.', 'CAP.payment.refund', `cap.${'x'.repeat(253)}`, 'cap.a%0Ab']) {
        expect((await get(owner, `/capabilities/${id}/bindings`).expect(400)).body).toEqual({ detail: 'capability_id must use the cap prefix' });
      }
    });
  });

  describe('route decisions', () => {
    const route = (overrides: Record<string, unknown> = {}) => ({
      capability: 'cap.payment.refund',
      selected: 'stripe.create_refund',
      binding_id: 'stripe.create_refund@native',
      reason: 'best_score',
      surface: 'mcp',
      catalog_source: 'native',
      evidence_floor: 'gateway_observed',
      evidence_ceiling: 'gateway_observed',
      eligible_count: 2,
      excluded_count: 1,
      excluded: [{ target: 'stripe.create_refund', binding_id: 'stripe.create_refund@broker_a', reason: 'evidence_floor' }],
      algorithm_version: 3,
      snapshot_version: 12,
      candidates: [{ binding_id: 'stripe.create_refund@native', score: 0.91 }],
      ...overrides,
    });
    const ingest = async (...entries: object[]) => {
      await streams.add('receipts', ...entries);
      await streams.pass('receipts');
    };
    const decisions = (op: Operator, query: Record<string, string | number> = {}) => get(op, '/route-decisions', query);

    it('answers every field of the receipts that carry a route, newest first; other receipts are not decisions', async () => {
      const op = await t.signIn();
      const routed = receiptRevision(op.workspaceId, { occurred_at: at(1), evidence_trust: 'gateway_observed', envelope: { route: route() } });
      const plain = receiptRevision(op.workspaceId, { occurred_at: at(2) });
      const newer = receiptRevision(op.workspaceId, { occurred_at: at(3), state: 'denied', decision: 'deny', evidence_trust: 'untrusted', envelope: { route: route({ reason: 'pinned_by_policy', excluded: [], excluded_count: 0 }) } });
      await ingest(routed, plain, newer, receiptRevision((await t.signIn()).workspaceId, { occurred_at: at(4), envelope: { route: route() } }));
      const res = await decisions(op).expect(200);
      expect(res.body).toEqual({
        decisions: [
          {
            receipt_id: newer.receipt_id,
            occurred_at: at(3),
            capability: 'cap.payment.refund',
            selected: 'stripe.create_refund',
            binding_id: 'stripe.create_refund@native',
            reason: 'pinned_by_policy',
            surface: 'mcp',
            catalog_source: 'native',
            evidence_floor: 'gateway_observed',
            evidence_ceiling: 'gateway_observed',
            evidence_trust: 'untrusted',
            state: 'denied',
            decision: 'deny',
            eligible_count: 2,
            excluded_count: 0,
            excluded: [],
            algorithm_version: 3,
            snapshot_version: 12,
          },
          {
            receipt_id: routed.receipt_id,
            occurred_at: at(1),
            capability: 'cap.payment.refund',
            selected: 'stripe.create_refund',
            binding_id: 'stripe.create_refund@native',
            reason: 'best_score',
            surface: 'mcp',
            catalog_source: 'native',
            evidence_floor: 'gateway_observed',
            evidence_ceiling: 'gateway_observed',
            evidence_trust: 'gateway_observed',
            state: 'completed',
            decision: 'allow',
            eligible_count: 2,
            excluded_count: 1,
            excluded: [{ target: 'stripe.create_refund', binding_id: 'stripe.create_refund@broker_a', reason: 'evidence_floor' }],
            algorithm_version: 3,
            snapshot_version: 12,
          },
        ],
        next_before: null,
      });
    });

    it('lists at most 8 exclusions while excluded_count keeps the recorded total; unrecorded fields are null', async () => {
      const op = await t.signIn();
      const excluded = Array.from({ length: 11 }, (_, i) => ({ target: `t${i}`, binding_id: `b${i}@native`, reason: 'candidate_cap' }));
      await ingest(
        receiptRevision(op.workspaceId, { occurred_at: at(1), envelope: { route: route({ excluded, excluded_count: 11 }) } }),
        receiptRevision(op.workspaceId, { occurred_at: at(0), envelope: { route: { capability: 'cap.x', excluded: [{ target: 't' }] } } }),
      );
      const [first, sparse] = (await decisions(op).expect(200)).body.decisions;
      expect(first.excluded).toEqual(excluded.slice(0, 8));
      expect(first.excluded_count).toBe(11);
      expect(sparse).toMatchObject({
        capability: 'cap.x',
        selected: null,
        binding_id: null,
        reason: null,
        eligible_count: null,
        excluded_count: 1,
        excluded: [{ target: 't', binding_id: null, reason: null }],
        algorithm_version: null,
        snapshot_version: null,
      });
    });

    it('follows the newest revision of an invocation: a route recorded on it counts, one only on an older revision does not', async () => {
      const op = await t.signIn();
      const first = receiptRevision(op.workspaceId, { occurred_at: at(1), state: 'in_flight', envelope: { route: route() } });
      const second = { ...first, receipt_revision: 2, state: 'completed', updated_at: at(2) };
      const dropped = receiptRevision(op.workspaceId, { occurred_at: at(5), envelope: { route: route() } });
      await ingest(first, second, dropped, { ...dropped, receipt_revision: 2, envelope: {} });
      const res = (await decisions(op).expect(200)).body.decisions;
      expect(res.map((d: { receipt_id: string; state: string }) => [d.receipt_id, d.state])).toEqual([[first.receipt_id, 'completed']]);
    });

    it('pages newest first with next_before (v1 cursor) and accepts a legacy RFC 3339 bound', async () => {
      const op = await t.signIn();
      const revs = Array.from({ length: 5 }, (_, i) => receiptRevision(op.workspaceId, { occurred_at: at(i), envelope: { route: route() } }));
      // Two receipts at the same instant: the receipt id breaks the tie.
      const twin = receiptRevision(op.workspaceId, { occurred_at: at(4), envelope: { route: route() } });
      await ingest(...revs, twin);
      const expected = [...revs, twin]
        .map((r) => [r.occurred_at, r.receipt_id])
        .sort((a, b) => (a[0] === b[0] ? (a[1] < b[1] ? 1 : -1) : a[0] < b[0] ? 1 : -1))
        .map(([, id]) => id);

      const seen: string[] = [];
      let before: string | null = null;
      do {
        const page: { body: { decisions: { receipt_id: string }[]; next_before: string | null } } = await decisions(op, before ? { limit: 2, before } : { limit: 2 }).expect(200);
        seen.push(...page.body.decisions.map((d) => d.receipt_id));
        before = page.body.next_before;
        if (before) {
          expect(before).toMatch(/^v1\.[A-Za-z0-9_-]+$/);
          expect(decodeReceiptCursor(op.workspaceId, before)).toMatchObject({ kind: 'keyset' });
        }
      } while (before);
      expect(seen).toEqual(expected);

      const legacy = (await decisions(op, { before: at(2) }).expect(200)).body.decisions.map((d: { receipt_id: string }) => d.receipt_id);
      expect(legacy).toEqual([revs[1].receipt_id, revs[0].receipt_id]);
      expect((await decisions(op, { before: '2020-01-01T00:00:00+02:00' }).expect(200)).body).toEqual({ decisions: [], next_before: null });
    });

    it('filters by capability', async () => {
      const op = await t.signIn();
      const refund = receiptRevision(op.workspaceId, { occurred_at: at(1), envelope: { route: route() } });
      const list = receiptRevision(op.workspaceId, { occurred_at: at(2), envelope: { route: route({ capability: 'cap.payment.list' }) } });
      await ingest(refund, list);
      expect((await decisions(op, { capability: 'cap.payment.list' }).expect(200)).body.decisions.map((d: { receipt_id: string }) => d.receipt_id)).toEqual([list.receipt_id]);
      expect((await decisions(op, { capability: 'cap.unknown' }).expect(200)).body).toEqual({ decisions: [], next_before: null });
    });

    it('answers 400 for a malformed cursor or capability, 422 for a limit outside 1-200', async () => {
      for (const before of ['v1.!!', 'v1.' + Buffer.from('nonsense').toString('base64url'), 'yesterday', 'v2.abc']) {
        expect((await decisions(owner, { before }).expect(400)).body).toEqual({ detail: 'invalid receipt cursor' });
      }
      for (const capability of ['payment.list', 'cap.', 'cap.a\nb']) {
        expect((await decisions(owner, { capability }).expect(400)).body).toEqual({ detail: 'capability_id must use the cap prefix' });
      }
      for (const limit of [0, 201, 'x']) {
        expect((await decisions(owner, { limit }).expect(422)).body.detail).toEqual([{ loc: ['query', 'limit'], msg: expect.any(String), type: expect.any(String) }]);
      }
      expect((await decisions(owner, { limit: 200 }).expect(200)).body.decisions).toEqual([]);
    });
  });

  describe('authorization', () => {
    for (const [name, p] of [
      ['capabilities', (ws: string) => `/api/v1/workspaces/${ws}/capabilities`],
      ['bindings', (ws: string) => `/api/v1/workspaces/${ws}/capabilities/cap.payment.list/bindings`],
      ['route decisions', (ws: string) => `/api/v1/workspaces/${ws}/route-decisions`],
    ] as const) {
      it(`${name}: any member reads; 401, 404 identical for non-members, frozen still reads`, async () => {
        await expectAccessMatrix(t, owner, await roleMembers(t, owner), { method: 'get', path: p, minRole: 'viewer', read: true });
      });
    }
  });
});
