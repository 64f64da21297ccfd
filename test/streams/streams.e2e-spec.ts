import { ReadModelPartitions } from 'src/modules/streams/read-model-partitions';
import { monthStart, StreamsService } from 'src/modules/streams/streams.service';
import { Operator, startTestApp, TestApp } from 'test/support/app';
import { ageReceiptHeads } from 'test/support/factories';
import { lockWaiters, openTransaction } from 'test/support/locks';
import { GatewayStreams, receiptRevision, usageEvent } from 'test/support/streams';

const TABLES = ['receipt_revisions', 'usage_events'] as const;
const suffix = (at: Date) => at.toISOString().slice(0, 7).replace('-', '');
/** A minute ago: inside the current month's partition (or, in its first minute, the last one's). */
const recent = () => new Date(Date.now() - 60_000).toISOString();

describe('read-model partitions and retention', () => {
  let t: TestApp;
  let gw: GatewayStreams;
  let streams: StreamsService;
  let owner: Operator;

  beforeAll(async () => {
    // Retention, a lock holder and three projection shards may each hold a connection at once.
    t = await startTestApp({ DATABASE_POOL_SIZE: '10' });
    gw = new GatewayStreams(t);
    streams = t.app.get(StreamsService);
    owner = await t.signIn();
  });
  afterAll(async () => {
    gw.close();
    await t.close();
  });

  /** The month partitions attached to `parent`. */
  const attached = async (parent: string): Promise<string[]> =>
    (await t.db.query(`SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = $1::regclass ORDER BY 1`, [parent])).map(
      (r: { name: string }) => r.name,
    );
  const exists = async (table: string): Promise<boolean> => (await t.db.query(`SELECT to_regclass($1) IS NOT NULL AS exists`, [table]))[0].exists;
  /** The consumer's partition cache (`table:YYYY-MM`), as the partition names it stands for. */
  const cached = (): string[] => [...t.app.get(ReadModelPartitions)['known']].map((key) => key.replace(/:(\d{4})-(\d{2})$/, '_p$1$2'));
  /** Every partition the cache lists is attached: the cache never promises a partition that is not there. */
  const expectCacheTrue = async () => {
    const real = new Set([...(await attached('receipt_revisions')), ...(await attached('usage_events'))]);
    expect(cached().filter((name) => !real.has(name))).toEqual([]);
  };
  /** One receipt and one usage event of `workspaceId` at `at`, each projected by a pass of its own stream. */
  const ingest = async (at: string, workspaceId = owner.workspaceId) => {
    await gw.add('receipts', receiptRevision(workspaceId, { occurred_at: at, updated_at: at }));
    await gw.add('usage', usageEvent(workspaceId, { occurred_at: at }));
    return [await gw.pass('receipts'), await gw.pass('usage')];
  };

  it('creates this month\'s and the next two months\' partitions, each committed on its own, and caches only what exists', async () => {
    const later = monthStart(new Date(), 4);
    expect(await streams.maintain(later)).toEqual({ dropped: [], failed: [] });
    for (const table of TABLES) {
      for (let m = 0; m <= 2; m++) expect(await attached(table)).toContain(`${table}_p${suffix(monthStart(later, m))}`);
    }
    expect(cached()).toEqual(expect.arrayContaining([`usage_events_p${suffix(later)}`, `receipt_revisions_p${suffix(monthStart(later, 2))}`]));
    await expectCacheTrue();
  });

  it('keeps the partitions a failed run created and a true cache, and ingestion goes on; the next run retains', async () => {
    const ws = await t.signIn();
    const later = monthStart(new Date(), 8);
    const old = new Date(monthStart(later, -t.config.readModelRetentionMonths).getTime() - 86_400_000);
    // An invocation older than the retention cutoff, as ingestion would have left it, and retention forced to fail on it.
    await ingest(recent(), ws.workspaceId);
    await ageReceiptHeads(t, ws.workspaceId, old);
    await t.db.query(`
      CREATE FUNCTION test_refuse_delete() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'retention refused by the test'; END $$;
      CREATE TRIGGER test_refuse_delete BEFORE DELETE ON receipt_heads FOR EACH ROW EXECUTE FUNCTION test_refuse_delete();`);
    try {
      expect(await streams.maintain(later)).toEqual({ dropped: [], failed: ['retain receipts'] });
      for (const table of TABLES) {
        for (let m = 0; m <= 2; m++) expect(await attached(table)).toContain(`${table}_p${suffix(monthStart(later, m))}`);
      }
      expect(cached()).toEqual(expect.arrayContaining([`receipt_revisions_p${suffix(later)}`, `usage_events_p${suffix(monthStart(later, 2))}`]));
      await expectCacheTrue();
      for (const result of await ingest(recent())) expect(result).toMatchObject({ projected: 1, failed: 0 });
    } finally {
      await t.db.query(`DROP TRIGGER test_refuse_delete ON receipt_heads; DROP FUNCTION test_refuse_delete()`);
    }
    expect(await streams.maintain(later)).toEqual({ dropped: [], failed: [] });
    expect(await t.db.query(`SELECT count(*)::int AS n FROM receipt_heads WHERE workspace_id = $1`, [ws.workspaceId])).toEqual([{ n: 0 }]);
    expect(await t.db.query(`SELECT total::int FROM receipt_counters WHERE workspace_id = $1`, [ws.workspaceId])).toEqual([{ total: 0 }]);
  });

  it('creates again a partition dropped under the running consumer and retries the batch instead of failing it', async () => {
    const at = new Date(monthStart(new Date(), -1).getTime() + 3 * 86_400_000).toISOString();
    for (const result of await ingest(at)) expect(result).toMatchObject({ projected: 1, failed: 0 });
    const month = suffix(new Date(at));
    expect(cached()).toEqual(expect.arrayContaining(TABLES.map((table) => `${table}_p${month}`)));
    for (const table of TABLES) await t.db.query(`DROP TABLE ${table}_p${month}`);

    for (const result of await ingest(at)) expect(result).toMatchObject({ projected: 1, failed: 0 });
    for (const table of TABLES) expect(await attached(table)).toContain(`${table}_p${month}`);
    const stored = await t.db.query(`SELECT count(*)::int AS n FROM usage_events WHERE workspace_id = $1 AND occurred_at = $2`, [owner.workspaceId, at]);
    expect(stored).toEqual([{ n: 1 }]);
    expect(await gw.pending('receipts')).toBe(0);
    expect(await gw.pending('usage')).toBe(0);
    await expectCacheTrue();
  });

  it('drops expired partitions without holding ingestion up: a reader that still sees them delays the drop, never the consumer', async () => {
    const expired = monthStart(new Date(), -t.config.readModelRetentionMonths - 1);
    for (const table of TABLES) await t.db.query(`SELECT read_model_ensure_partition($1, $2::date)`, [table, expired.toISOString().slice(0, 10)]);
    await ingest(recent());
    // A long report still reading every partition: DROP TABLE would queue for ACCESS EXCLUSIVE on
    // the parent behind it, and every ingestion batch behind that.
    const reader = await openTransaction(t.db);
    let maintenance: Promise<unknown> | null = null;
    let settled = false;
    try {
      for (const table of TABLES) await reader.query(`SELECT count(*) FROM ${table}`);
      maintenance = streams.maintain().finally(() => (settled = true));
      await lockWaiters(t.db, 1);
      for (const result of await ingest(recent())) expect(result).toMatchObject({ projected: 1, failed: 0 });
      expect(settled).toBe(false);
    } finally {
      await reader.end();
    }
    expect(await maintenance).toEqual({ dropped: expect.arrayContaining(TABLES.map((table) => `${table}_p${suffix(expired)}`)), failed: [] });
    for (const table of TABLES) expect(await exists(`${table}_p${suffix(expired)}`)).toBe(false);
  });

  it('finishes drops an earlier run left half done: a detach interrupted while pending, a table detached and not dropped', async () => {
    const expired = monthStart(new Date(), -t.config.readModelRetentionMonths - 2);
    const [receipts, usage] = TABLES.map((table) => `${table}_p${suffix(expired)}`);
    for (const table of TABLES) await t.db.query(`SELECT read_model_ensure_partition($1, $2::date)`, [table, expired.toISOString().slice(0, 10)]);
    await t.db.query(`ALTER TABLE usage_events DETACH PARTITION ${usage}`);
    // A concurrent detach cancelled while it waits for a reader leaves the partition pending detach.
    const reader = await openTransaction(t.db);
    try {
      await reader.query(`SELECT count(*) FROM receipt_revisions`);
      const detach = t.db.query(`ALTER TABLE receipt_revisions DETACH PARTITION ${receipts} CONCURRENTLY`).catch((error: Error) => error.message);
      await lockWaiters(t.db, 1);
      await t.db.query(`SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'ALTER TABLE receipt_revisions DETACH%'`);
      expect(await detach).toMatch(/cancel/);
    } finally {
      await reader.end();
    }
    expect(await t.db.query(`SELECT inhdetachpending AS pending FROM pg_inherits WHERE inhrelid = $1::regclass`, [receipts])).toEqual([{ pending: true }]);

    const result = await streams.maintain();
    expect(result).toEqual({ dropped: expect.arrayContaining([receipts, usage]), failed: [] });
    for (const table of [receipts, usage]) expect(await exists(table)).toBe(false);
  });

  it('creates partitions while ingestion transactions hold the parent (ATTACH does not queue behind them)', async () => {
    const later = monthStart(new Date(), 12);
    const writer = await openTransaction(t.db);
    try {
      // The lock an INSERT takes on the parent, held as by a batch that has not committed yet.
      await writer.query(`LOCK TABLE usage_events, receipt_revisions IN ROW EXCLUSIVE MODE`);
      expect(await streams.maintain(later)).toEqual({ dropped: [], failed: [] });
    } finally {
      await writer.end();
    }
    for (const table of TABLES) expect(await attached(table)).toContain(`${table}_p${suffix(monthStart(later, 2))}`);
  });

  it('runs every step on the one connection it holds, so it completes with a pool of one (the embedded database)', async () => {
    const single = await startTestApp({ DATABASE_POOL_SIZE: '1' });
    try {
      await single.signIn();
      expect(await single.app.get(StreamsService).maintain(monthStart(new Date(), 3))).toEqual({ dropped: [], failed: [] });
    } finally {
      await single.close();
    }
  });

  it('runs on one replica at a time (advisory lock) and creates each partition once however many callers race', async () => {
    const holder = await openTransaction(t.db);
    try {
      await holder.query(`SELECT pg_advisory_xact_lock(hashtext('read_model_maintenance'))`);
      expect(await streams.maintain()).toBeNull();
    } finally {
      await holder.end();
    }
    const month = monthStart(new Date(), 20).toISOString().slice(0, 10);
    const outcomes = await Promise.allSettled(Array.from({ length: 5 }, () => t.db.query(`SELECT read_model_ensure_partition('usage_events', $1::date)`, [month])));
    expect(outcomes.map((o) => o.status)).toEqual(Array(5).fill('fulfilled'));
    expect((await attached('usage_events')).filter((name) => name === `usage_events_p${month.slice(0, 7).replace('-', '')}`)).toHaveLength(1);
    const runs = await Promise.all([streams.maintain(), streams.maintain(), streams.maintain()]);
    expect(runs.filter((r) => r !== null).length).toBeGreaterThanOrEqual(1);
    for (const run of runs) if (run) expect(run.failed).toEqual([]);
    await expectCacheTrue();
  });

  describe('byte budget of a pass (STREAM_BATCH_MAX_BYTES)', () => {
    const BUDGET = 1_048_576;
    let small: TestApp;
    let smallGw: GatewayStreams;
    beforeAll(async () => {
      small = await startTestApp({ STREAM_BATCH_MAX_BYTES: String(BUDGET) });
      smallGw = new GatewayStreams(small);
    });
    afterAll(async () => {
      smallGw.close();
      await small.close();
    });

    it('never lets a burst of very large receipt envelopes make a pass hold more than the budget plus one entry, and loses none', async () => {
      const op = await small.signIn();
      const receipt = (kib: number) => receiptRevision(op.workspaceId, { occurred_at: recent(), updated_at: recent(), envelope: { blob: 'x'.repeat(kib * 1024) } });
      // Small entries first: the next pass plans its first read for entries of their size.
      await smallGw.add('receipts', receipt(1), receipt(1), receipt(1));
      expect(await smallGw.pass('receipts')).toMatchObject({ fresh: 3, projected: 3 });
      const burst = [receipt(1), ...Array.from({ length: 24 }, (_, i) => receipt(100 + 20 * (i % 10))), receipt(1500), receipt(1), receipt(300)];
      await smallGw.add('receipts', ...burst);
      const sizes = burst.map((r) => 'data'.length + JSON.stringify(r).length);
      const largest = Math.max(...sizes);

      const passes: { fresh: number; projected: number; bytes: number }[] = [];
      for (let i = 0; i < 40 && passes.reduce((n, p) => n + p.projected, 0) < burst.length; i++) passes.push((await smallGw.pass('receipts'))!);
      for (const pass of passes) expect(pass.bytes).toBeLessThan(BUDGET + largest);
      // The budget split the burst (~6 MiB); each pass admitted what it projected, nothing twice.
      expect(passes.length).toBeGreaterThan(3);
      expect(passes.map((p) => p.projected)).toEqual(passes.map((p) => p.fresh));
      expect(passes.reduce((n, p) => n + p.bytes, 0)).toBe(sizes.reduce((a, b) => a + b, 0));
      expect(await small.db.query(`SELECT count(*)::int AS n FROM receipt_heads WHERE workspace_id = $1`, [op.workspaceId])).toEqual([{ n: burst.length + 3 }]);
      expect(await smallGw.pending('receipts')).toBe(0);
    });
  });
});
