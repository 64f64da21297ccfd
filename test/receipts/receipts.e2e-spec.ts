import { monthStart, StreamsService } from 'src/modules/streams/streams.service';
import { encodeV1ReceiptCursor } from 'src/modules/receipts/receipt-cursor';
import { bearer, Operator, startTestApp, TestApp } from 'test/support/app';
import { freezeWorkspace } from 'test/support/factories';
import { GatewayStreams, receiptRevision, uid } from 'test/support/streams';

/** The 15th of last month, 10:00 UTC: inside retention whatever the date. */
const BASE = new Date(monthStart(new Date(), -1).getTime() + 14 * 86_400_000 + 10 * 3_600_000);
const at = (minutes: number) => new Date(BASE.getTime() + minutes * 60_000).toISOString();

describe('receipts read model', () => {
  let t: TestApp;
  let gw: GatewayStreams;
  let owner: Operator;
  let other: Operator;

  beforeAll(async () => {
    t = await startTestApp();
    gw = new GatewayStreams(t);
    owner = await t.signIn();
    other = await t.signIn();
  });
  afterAll(async () => {
    gw.close();
    await t.close();
  });

  const list = (op: Operator, query: Record<string, string | number> = {}, ws = op.workspaceId) =>
    t.http().get(`/api/v1/workspaces/${ws}/receipts`).query(query).set(bearer(op));
  const detail = (op: Operator, receiptId: string, query: Record<string, string | number> = {}) =>
    t.http().get(`/api/v1/workspaces/${op.workspaceId}/receipts/${receiptId}`).query(query).set(bearer(op));
  const revisions = (op: Operator, receiptId: string, query: Record<string, string | number> = {}) =>
    t.http().get(`/api/v1/workspaces/${op.workspaceId}/receipts/${receiptId}/revisions`).query(query).set(bearer(op));
  const ingest = async (...entries: object[]) => {
    await gw.add('receipts', ...entries);
    return gw.pass('receipts');
  };

  describe('projection', () => {
    it('projects a revision into the list projection, the detail and the overview', async () => {
      const ws = await t.signIn();
      const rev = receiptRevision(ws.workspaceId, { occurred_at: at(0), usd_micros: 1200, effect_claim: 'accepted', verification_evidence_trust: 'vendor_signed' });
      expect(await ingest(rev)).toMatchObject({ fresh: 1, projected: 1, parked: 0, failed: 0 });

      const res = await list(ws).expect(200);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      const projection = {
        receipt_id: rev.receipt_id,
        receipt_revision: 1,
        invocation_id: rev.invocation_id,
        tool: 'github.create_issue',
        key_id: 'key_default',
        connection_id: 'conn_default',
        state: 'completed',
        decision: 'allow',
        dispatch_state: 'accepted',
        evidence_trust: 'gateway_observed',
        verification_state: 'not_required',
        verification_method: 'none',
        effect_claim: 'accepted',
        verification_evidence_trust: 'vendor_signed',
        vendor_http_status: 201,
        upstream_id: 'gh-123',
        latency_ms: 84,
        usd_micros: 1200,
        attempt_count: 1,
        occurred_at: at(0),
        updated_at: rev.updated_at,
      };
      expect(res.body).toEqual({ receipts: [projection], next_cursor: null, next_before: null });

      const one = await detail(ws, rev.receipt_id).expect(200);
      expect(one.body).toEqual({
        ...projection,
        idempotency_key: 'idem-1',
        request_id: 'req_1',
        policy_id: 'pol_1',
        policy_revision_id: 'rev_1',
        envelope: rev.envelope,
      });

      const overview = await t.http().get(`/api/v1/workspaces/${ws.workspaceId}/overview`).set(bearer(ws)).expect(200);
      expect(overview.body.receipts).toEqual({ total: 1, last_at: at(0) });
      expect(await gw.pending('receipts')).toBe(0);
    });

    it('reports zeroes in the overview of a workspace without receipts', async () => {
      const ws = await t.signIn();
      const overview = await t.http().get(`/api/v1/workspaces/${ws.workspaceId}/overview`).set(bearer(ws)).expect(200);
      expect(overview.body.receipts).toEqual({ total: 0, last_at: null });
    });

    it('converges out-of-order and duplicated revisions to the newest, keeping every revision immutable', async () => {
      const ws = await t.signIn();
      const invocation = uid('inv');
      const revs = [1, 2, 3].map((n) =>
        receiptRevision(ws.workspaceId, { invocation_id: invocation, receipt_revision: n, state: n === 3 ? 'completed' : 'in_flight', occurred_at: at(5), updated_at: at(5 + n) }),
      );
      await ingest(revs[1], revs[0]);
      await ingest(revs[2], revs[2], revs[1]);
      await ingest(revs[0], revs[1]);

      const res = await list(ws).expect(200);
      expect(res.body.receipts).toHaveLength(1);
      expect(res.body.receipts[0]).toMatchObject({ receipt_id: revs[2].receipt_id, receipt_revision: 3, state: 'completed', updated_at: at(8) });

      for (const rev of revs) {
        const newest = await detail(ws, rev.receipt_id).expect(200);
        expect(newest.body).toMatchObject({ receipt_id: revs[2].receipt_id, receipt_revision: 3 });
      }
      const historical = await detail(ws, revs[2].receipt_id, { revision: 1 }).expect(200);
      expect(historical.body).toMatchObject({ receipt_id: revs[0].receipt_id, receipt_revision: 1, state: 'in_flight' });

      const all = await revisions(ws, revs[0].receipt_id).expect(200);
      expect(all.body.revisions.map((r: { receipt_revision: number }) => r.receipt_revision)).toEqual([3, 2, 1]);
      expect(all.body.next_before_revision).toBeNull();
      const stored = await t.db.query(`SELECT count(*)::int AS n FROM receipt_revisions WHERE invocation_id = $1`, [invocation]);
      expect(stored[0].n).toBe(3);

      const overview = await t.http().get(`/api/v1/workspaces/${ws.workspaceId}/overview`).set(bearer(ws)).expect(200);
      expect(overview.body.receipts).toEqual({ total: 1, last_at: at(5) });
    });

    it('never lets another workspace take over an invocation', async () => {
      const a = await t.signIn();
      const b = await t.signIn();
      const invocation = uid('inv');
      await ingest(receiptRevision(a.workspaceId, { invocation_id: invocation, receipt_revision: 1, occurred_at: at(1) }));
      const hijack = receiptRevision(b.workspaceId, { invocation_id: invocation, receipt_revision: 9, state: 'denied', occurred_at: at(1) });
      await ingest(hijack);

      const res = await list(a).expect(200);
      expect(res.body.receipts).toEqual([expect.objectContaining({ invocation_id: invocation, receipt_revision: 1, state: 'completed' })]);
      expect((await list(b).expect(200)).body.receipts).toEqual([]);
      await detail(b, hijack.receipt_id).expect(404, { detail: 'receipt not found' });
    });

    it('parks malformed entries, acknowledges them and projects the rest of the batch', async () => {
      const ws = await t.signIn();
      const good = receiptRevision(ws.workspaceId, { occurred_at: at(2) });
      const ids = await gw.add(
        'receipts',
        'not json',
        '[1,2]',
        receiptRevision(ws.workspaceId, { state: 'exploded' }),
        receiptRevision(ws.workspaceId, { receipt_revision: 0 }),
        receiptRevision(ws.workspaceId, { occurred_at: 'yesterday' }),
        { ...receiptRevision(ws.workspaceId), invocation_id: undefined },
        receiptRevision('ws_nonexistent'),
        good,
      );
      await gw.redis.xAdd(gw.key('receipts'), '*', { payload: '{}' });
      const result = await gw.pass('receipts');
      expect(result).toMatchObject({ fresh: 9, projected: 1, parked: 8, failed: 0 });
      expect(await gw.pending('receipts')).toBe(0);

      const parked = await t.db.query(`SELECT entry_id, workspace_id, reason FROM stream_parked WHERE stream = 'receipts' AND entry_id = ANY($1) ORDER BY entry_id`, [ids]);
      expect(parked.map((p: { reason: string }) => p.reason)).toEqual([
        'data is not JSON',
        'data is not a JSON object',
        'state is not an allowed value',
        'receipt_revision must be an integer >= 1',
        'occurred_at must be an RFC 3339 UTC timestamp',
        'invocation_id must be a string of 1-64 characters',
        'unknown workspace',
      ]);
      expect(parked[2].workspace_id).toBe(ws.workspaceId);
      const missing = await t.db.query(`SELECT reason FROM stream_parked WHERE stream = 'receipts' AND reason = 'missing data field'`);
      expect(missing).toHaveLength(1);
      expect((await list(ws).expect(200)).body.receipts.map((r: { receipt_id: string }) => r.receipt_id)).toEqual([good.receipt_id]);
    });

    it('rolls back one failing workspace batch without blocking the others; its entries stay pending and are retried', async () => {
      const failing = await t.signIn();
      const healthy = await t.signIn();
      await t.db.query(`
        CREATE FUNCTION fail_one_workspace() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF NEW.workspace_id = '${failing.workspaceId}' THEN RAISE EXCEPTION 'injected failure'; END IF; RETURN NEW; END $$;
        CREATE TRIGGER fail_one_workspace BEFORE INSERT ON receipt_heads FOR EACH ROW EXECUTE FUNCTION fail_one_workspace();`);
      const stuck = receiptRevision(failing.workspaceId, { occurred_at: at(3) });
      const fine = receiptRevision(healthy.workspaceId, { occurred_at: at(3) });
      const result = await ingest(stuck, fine);
      expect(result).toMatchObject({ projected: 1, failed: 1 });
      expect((await list(healthy).expect(200)).body.receipts).toHaveLength(1);
      expect((await list(failing).expect(200)).body.receipts).toHaveLength(0);
      const [{ n }] = await t.db.query(`SELECT count(*)::int AS n FROM receipt_revisions WHERE workspace_id = $1`, [failing.workspaceId]);
      expect(n).toBe(0);
      expect(await gw.pending('receipts')).toBe(1);

      await t.db.query(`DROP TRIGGER fail_one_workspace ON receipt_heads; DROP FUNCTION fail_one_workspace();`);
      expect(await gw.pass('receipts', { claimIdleMs: 0 })).toMatchObject({ reclaimed: 1, projected: 1, failed: 0 });
      expect((await list(failing).expect(200)).body.receipts.map((r: { receipt_id: string }) => r.receipt_id)).toEqual([stuck.receipt_id]);
      expect(await gw.pending('receipts')).toBe(0);
    });

    it('isolates a failing workspace inside a shard of many workspaces, batch after batch, while draining', async () => {
      const failing = await t.signIn();
      const healthy = await Promise.all([0, 1, 2, 3, 4].map(() => t.signIn()));
      await t.db.query(`
        CREATE FUNCTION fail_one_workspace() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF NEW.workspace_id = '${failing.workspaceId}' THEN RAISE EXCEPTION 'injected failure'; END IF; RETURN NEW; END $$;
        CREATE TRIGGER fail_one_workspace BEFORE INSERT ON receipt_heads FOR EACH ROW EXECUTE FUNCTION fail_one_workspace();`);
      const stuck = [0, 1].map((m) => receiptRevision(failing.workspaceId, { occurred_at: at(40 + m) }));
      const fine = healthy.flatMap((ws, i) => [0, 1].map((m) => receiptRevision(ws.workspaceId, { occurred_at: at(40 + 2 * i + m) })));
      await gw.add('receipts', stuck[0], ...fine.slice(0, 5), stuck[1], ...fine.slice(5));
      // Batches of 6 entries over 2 shards: each shard holds several workspaces, so the failing
      // one's shard rolls back and is retried one workspace at a time.
      const projected = await t.app.get(StreamsService).drain({ batchLimit: 6, shards: 2 });
      expect(projected).toBe(10);
      for (const ws of healthy) expect((await list(ws).expect(200)).body.receipts).toHaveLength(2);
      expect((await list(failing).expect(200)).body.receipts).toHaveLength(0);
      expect(await gw.pending('receipts')).toBe(2);

      await t.db.query(`DROP TRIGGER fail_one_workspace ON receipt_heads; DROP FUNCTION fail_one_workspace();`);
      expect(await gw.pass('receipts', { claimIdleMs: 0 })).toMatchObject({ reclaimed: 2, projected: 2, failed: 0 });
      expect((await list(failing).expect(200)).body.receipts).toHaveLength(2);
      expect(await gw.pending('receipts')).toBe(0);
    });

    it('reclaims entries left pending by a consumer that stopped, in bounded pages, and persists its scan position', async () => {
      const ws = await t.signIn();
      await gw.pass('receipts');
      const revs = [0, 1, 2].map((m) => receiptRevision(ws.workspaceId, { occurred_at: at(20 + m) }));
      await gw.add('receipts', ...revs);
      // A consumer that read the entries and died before acknowledging them.
      await gw.redis.xReadGroup('control', 'crashed', { key: gw.key('receipts'), id: '>' }, { COUNT: 10 });
      expect(await gw.pending('receipts')).toBe(3);

      expect(await gw.pass('receipts')).toMatchObject({ reclaimed: 0, fresh: 0 });
      expect((await list(ws).expect(200)).body.receipts).toHaveLength(0);

      const fresh = receiptRevision(ws.workspaceId, { occurred_at: at(30) });
      await gw.add('receipts', fresh);
      expect(await gw.pass('receipts', { claimIdleMs: 0, batchLimit: 2 })).toMatchObject({ reclaimed: 2, fresh: 0, projected: 2 });
      const position = await gw.redis.get(t.app.get(StreamsService).claimPositionKey('receipts'));
      expect(position).toMatch(/^\d+-\d+$/);
      expect(await gw.pass('receipts', { claimIdleMs: 0, batchLimit: 2 })).toMatchObject({ reclaimed: 1, fresh: 1, projected: 2 });
      expect((await list(ws).expect(200)).body.receipts).toHaveLength(4);
      expect(await gw.pending('receipts')).toBe(0);
    });
  });

  describe('list', () => {
    let ws: Operator;
    const ids: string[] = [];

    beforeAll(async () => {
      ws = await t.signIn();
      const variants: Record<string, unknown>[] = [
        { state: 'denied', decision: 'deny', dispatch_state: 'not_attempted' },
        { state: 'awaiting_approval', decision: 'approval_required', tool: 'slack.post' },
        { evidence_trust: 'broker_attested', verification_state: 'pending', key_id: 'key_other' },
        { connection_id: 'conn_other', verification_state: 'verified', evidence_trust: 'vendor_signed' },
        {},
        {},
      ];
      const entries = variants.map((v, i) => receiptRevision(ws.workspaceId, { occurred_at: at(100 + i), ...v }));
      // Two receipts at the same instant: the receipt id breaks the tie.
      entries.push(receiptRevision(ws.workspaceId, { occurred_at: at(105), receipt_id: 'rcp_0000same' }));
      // A superseded revision of the newest invocation.
      const newest = entries[5];
      entries.push({ ...newest, receipt_id: uid('rcp'), receipt_revision: 2, state: 'inconclusive' });
      await ingest(...entries);
      const res = await list(ws, { limit: 200 }).expect(200);
      ids.push(...res.body.receipts.map((r: { receipt_id: string }) => r.receipt_id));
    });

    it('lists newest first on (occurred_at, receipt_id), one row per invocation', async () => {
      const res = await list(ws).expect(200);
      expect(res.body.receipts).toHaveLength(7);
      const keys = res.body.receipts.map((r: { occurred_at: string; receipt_id: string }) => [r.occurred_at, r.receipt_id]);
      const sorted = [...keys].sort((x, y) => (x[0] === y[0] ? (x[1] < y[1] ? 1 : -1) : x[0] < y[0] ? 1 : -1));
      expect(keys).toEqual(sorted);
      expect(res.body.receipts[0]).toMatchObject({ receipt_revision: 2, state: 'inconclusive' });
    });

    it('pages with v2 cursors that are also emitted as next_before, superseded revisions never taking a slot', async () => {
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const res: { body: { receipts: { receipt_id: string }[]; next_cursor: string | null; next_before: string | null } } = await list(
          ws,
          cursor ? { limit: 2, cursor } : { limit: 2 },
        ).expect(200);
        expect(res.body.next_before).toBe(res.body.next_cursor);
        if (res.body.next_cursor) expect(res.body.next_cursor).toMatch(/^v2\./);
        seen.push(...res.body.receipts.map((r) => r.receipt_id));
        cursor = res.body.next_cursor;
      } while (cursor);
      expect(seen).toEqual(ids);
    });

    it('accepts a v1 cursor for the same position', async () => {
      const first = await list(ws, { limit: 3 }).expect(200);
      const last = first.body.receipts[2];
      const v1 = encodeV1ReceiptCursor(new Date(last.occurred_at), last.receipt_id);
      const byV1 = await list(ws, { limit: 3, cursor: v1 }).expect(200);
      const byV2 = await list(ws, { limit: 3, cursor: first.body.next_cursor }).expect(200);
      expect(byV1.body).toEqual(byV2.body);
      expect(byV1.body.receipts[0].receipt_id).toBe(ids[3]);
    });

    it('reads a legacy time cursor and the legacy before bound as strictly older than that time', async () => {
      const byCursor = await list(ws, { cursor: at(104) }).expect(200);
      expect(byCursor.body.receipts.map((r: { occurred_at: string }) => r.occurred_at)).toEqual([at(103), at(102), at(101), at(100)]);
      const byBefore = await list(ws, { before: at(104) }).expect(200);
      expect(byBefore.body).toEqual(byCursor.body);
    });

    it.each([
      ['state', 'denied', 1],
      ['decision', 'approval_required', 1],
      ['evidence_trust', 'broker_attested', 1],
      ['verification_state', 'verified', 1],
      ['tool', 'slack.post', 1],
      ['key_id', 'key_other', 1],
      ['connection_id', 'conn_other', 1],
      ['state', 'completed', 4],
      ['state', 'in_flight', 0],
    ])('filters on %s=%s', async (field, value, count) => {
      const res = await list(ws, { [field]: value }).expect(200);
      expect(res.body.receipts).toHaveLength(count);
      for (const r of res.body.receipts) expect(r[field]).toBe(value);
    });

    it('filters on the half-open window [from, to)', async () => {
      const res = await list(ws, { from: at(101), to: at(103) }).expect(200);
      expect(res.body.receipts.map((r: { occurred_at: string }) => r.occurred_at)).toEqual([at(102), at(101)]);
    });

    it.each([
      [{ state: 'exploded' }, 'unknown invocation state'],
      [{ evidence_trust: 'trust_me' }, 'unknown evidence trust class'],
      [{ verification_state: 'maybe' }, 'unknown verification state'],
      [{ cursor: 'garbage' }, 'invalid receipt cursor'],
      [{ cursor: 'v2.garbage' }, 'invalid receipt cursor'],
      [{ cursor: 'v1.' }, 'invalid receipt cursor'],
      [{ before: 'yesterday' }, 'invalid receipt cursor'],
      [{ cursor: '2026-01-01T00:00:00Z', before: '2026-01-01T00:00:00Z' }, 'invalid receipt cursor'],
    ])('answers 400 for %j', async (query, message) => {
      await list(ws, query).expect(400, { detail: message });
    });

    it.each([
      [{ decision: 'maybe' }, ['query', 'decision'], 'unknown authorization decision'],
      [{ from: '2026-01-01T00:00:00Z' }, ['query', 'to'], 'from and to must be provided together'],
      [{ to: '2026-01-01T00:00:00Z' }, ['query', 'from'], 'from and to must be provided together'],
      [{ from: '2026-01-02T00:00:00Z', to: '2026-01-01T00:00:00Z' }, ['query', 'from'], 'invalid UTC window'],
      [{ from: 'monday', to: '2026-01-01T00:00:00Z' }, ['query', 'from'], 'invalid UTC window'],
    ])('answers 422 for %j', async (query, loc, msg) => {
      const res = await list(ws, query).expect(422);
      expect(res.body).toEqual({ detail: [{ loc, msg, type: 'value_error' }] });
    });

    it.each([
      ['limit', { limit: 0 }],
      ['limit', { limit: 201 }],
      ['limit', { limit: 'ten' }],
      ['tool', { tool: 'x'.repeat(257) }],
      ['key_id', { key_id: 'k'.repeat(65) }],
      ['connection_id', { connection_id: 'c'.repeat(65) }],
      ['cursor', { cursor: 'a'.repeat(2049) }],
      ['before', { before: 'a'.repeat(1025) }],
    ])('answers 422 field-shaped for an out-of-bounds %s', async (field, query) => {
      const res = await list(ws, query as Record<string, string | number>).expect(422);
      expect(res.body.detail[0].loc).toEqual(['query', field]);
    });
  });

  describe('detail and revisions', () => {
    let ws: Operator;
    const invocation = uid('inv');
    const revs: ReturnType<typeof receiptRevision>[] = [];

    beforeAll(async () => {
      ws = await t.signIn();
      for (let n = 1; n <= 5; n++) revs.push(receiptRevision(ws.workspaceId, { invocation_id: invocation, receipt_revision: n, occurred_at: at(200), updated_at: at(200 + n) }));
      await ingest(...revs);
    });

    it('pages revisions newest first with before_revision', async () => {
      const first = await revisions(ws, revs[0].receipt_id, { limit: 2 }).expect(200);
      expect(first.body.revisions.map((r: { receipt_revision: number }) => r.receipt_revision)).toEqual([5, 4]);
      expect(first.body.next_before_revision).toBe(4);
      const second = await revisions(ws, revs[0].receipt_id, { limit: 2, before_revision: 4 }).expect(200);
      expect(second.body.revisions.map((r: { receipt_revision: number }) => r.receipt_revision)).toEqual([3, 2]);
      const last = await revisions(ws, revs[0].receipt_id, { limit: 2, before_revision: 2 }).expect(200);
      expect(last.body).toEqual({ revisions: [expect.objectContaining({ receipt_revision: 1, receipt_id: revs[0].receipt_id })], next_before_revision: null });
      expect(Object.keys(last.body.revisions[0])).not.toContain('envelope');
    });

    it('answers 404 receipt not found for an unknown id, a missing revision and another workspace', async () => {
      await detail(ws, 'rcp_unknown').expect(404, { detail: 'receipt not found' });
      await detail(ws, revs[0].receipt_id, { revision: 6 }).expect(404, { detail: 'receipt not found' });
      await revisions(ws, 'rcp_unknown').expect(404, { detail: 'receipt not found' });
      await detail(other, revs[0].receipt_id).expect(404, { detail: 'receipt not found' });
      await t.http().get(`/api/v1/workspaces/${other.workspaceId}/receipts/${revs[0].receipt_id}/revisions`).set(bearer(other)).expect(404, { detail: 'receipt not found' });
    });

    it('refuses a revision or before_revision below 1 and a bad limit with 422', async () => {
      for (const [call, query, field] of [
        [detail, { revision: 0 }, 'revision'],
        [detail, { revision: 'x' }, 'revision'],
        [revisions, { before_revision: 0 }, 'before_revision'],
        [revisions, { limit: 201 }, 'limit'],
      ] as const) {
        const res = await call(ws, revs[0].receipt_id, query).expect(422);
        expect(res.body.detail[0].loc).toEqual(['query', field]);
      }
    });
  });

  describe('authorization', () => {
    let receiptId: string;
    beforeAll(async () => {
      const rev = receiptRevision(owner.workspaceId, { occurred_at: at(300) });
      receiptId = rev.receipt_id;
      await ingest(rev);
    });
    const paths = () => [`receipts`, `receipts/${receiptId}`, `receipts/${receiptId}/revisions`];

    it('answers 401 without a session', async () => {
      for (const path of paths()) await t.http().get(`/api/v1/workspaces/${owner.workspaceId}/${path}`).expect(401, { detail: 'session required' });
    });

    it('answers 404 for a non-member exactly as for a missing workspace', async () => {
      for (const path of paths()) {
        const hidden = await t.http().get(`/api/v1/workspaces/${owner.workspaceId}/${path}`).set(bearer(other)).expect(404);
        const missing = await t.http().get(`/api/v1/workspaces/ws_missing/${path}`).set(bearer(other)).expect(404);
        expect(hidden.body).toEqual({ detail: 'workspace not found' });
        expect(missing.body).toEqual(hidden.body);
      }
    });

    it('lets a viewer read, also in a frozen workspace (workspace.read is allowed while frozen)', async () => {
      const viewer = await t.member(owner, 'viewer');
      await freezeWorkspace(t, owner.workspaceId, true);
      try {
        for (const path of paths()) await t.http().get(`/api/v1/workspaces/${owner.workspaceId}/${path}`).set(bearer(viewer)).expect(200);
      } finally {
        await freezeWorkspace(t, owner.workspaceId, false);
      }
    });
  });

  describe('retention', () => {
    it('drops whole monthly partitions past the retention period and the heads and counts that went with them', async () => {
      const ws = await t.signIn();
      await ingest(receiptRevision(ws.workspaceId, { occurred_at: at(400) }));
      const partition = `receipt_revisions_p${BASE.toISOString().slice(0, 7).replace('-', '')}`;
      const later = monthStart(BASE, t.config.readModelRetentionMonths + 1);
      const { dropped, failed } = (await t.app.get(StreamsService).maintain(later))!;
      expect(failed).toEqual([]);
      expect(dropped).toContain(partition);
      expect(dropped).toContain(`usage_events_p${BASE.toISOString().slice(0, 7).replace('-', '')}`);
      expect((await list(ws).expect(200)).body.receipts).toEqual([]);
      const overview = await t.http().get(`/api/v1/workspaces/${ws.workspaceId}/overview`).set(bearer(ws)).expect(200);
      expect(overview.body.receipts.total).toBe(0);
      const [{ exists }] = await t.db.query(`SELECT to_regclass($1) IS NOT NULL AS exists`, [partition]);
      expect(exists).toBe(false);
      const ahead = await t.db.query(`SELECT to_regclass($1) IS NOT NULL AS exists`, [`receipt_revisions_p${monthStart(later, 2).toISOString().slice(0, 7).replace('-', '')}`]);
      expect(ahead[0].exists).toBe(true);
    });
  });
});
