import { createClient, RedisClientType } from 'redis';
import { signServiceToken } from 'src/platform/auth/service-token';
import { expectAccessMatrix, roleMembers } from 'test/support/access-matrix';
import { bearer, Operator, SERVICE_SECRET, startTestApp, TestApp } from 'test/support/app';
import { REDIS_URL } from 'test/support/database';
import { loseSnapshotVersion } from 'test/support/factories';

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const price = (model: string, base = 1) => ({
  model,
  input_micros_usd_per_mtok: 1_000_000 * base,
  output_micros_usd_per_mtok: 4_000_000 * base,
  cached_micros_usd_per_mtok: 500_000 * base,
  reasoning_micros_usd_per_mtok: 4_000_000 * base,
});

describe('pricing', () => {
  let t: TestApp;
  let redis: RedisClientType;
  let owner: Operator;

  beforeAll(async () => {
    t = await startTestApp();
    redis = createClient({ url: REDIS_URL });
    await redis.connect();
    owner = await t.signIn();
  });
  afterAll(async () => {
    redis.destroy();
    await t.close();
  });

  const path = (ws: string) => `/api/v1/workspaces/${ws}/pricing`;
  const put = (op: Operator, body: unknown, ws = op.workspaceId) => t.http().put(path(ws)).set(bearer(op)).send(body as object);
  const get = (op: Operator, ws = op.workspaceId) => t.http().get(path(ws)).set(bearer(op));
  const audits = async (ws: string) =>
    (await t.db.query(`SELECT action, target, detail FROM audit_events WHERE workspace_id = $1 AND action = 'pricing.replace' ORDER BY occurred_at, id`, [ws])) as {
      target: string;
      detail: Record<string, unknown>;
    }[];
  const internalSnapshot = async (ws: string) =>
    (await t.http().get(`/internal/v1/workspaces/${ws}/snapshot`).set('Authorization', `Bearer ${await signServiceToken(SERVICE_SECRET, 'gateway', 'control')}`).expect(200)).body;
  const published = async (ws: string) => JSON.parse((await redis.get(`${t.config.redisPrefix}:snapshot:${ws}`)) ?? 'null');
  const versions = async (ws: string) => (await t.db.query(`SELECT snapshot_version, published_version FROM workspaces WHERE id = $1`, [ws]))[0];

  it('reads an empty pricebook before anything was set, and publishes none', async () => {
    const op = await t.signIn();
    const res = await get(op).expect(200);
    expect(res.body).toEqual({
      schema_version: 1,
      workspace_id: op.workspaceId,
      revision: 0,
      prices: [],
      updated_at: null,
      publication: { state: 'published', requested_version: 1, published_version: 1 },
    });
    expect((await internalSnapshot(op.workspaceId)).pricebook).toBeNull();
  });

  it('replaces the pricebook, sorted by model, audits pricing.replace and publishes it in the snapshot', async () => {
    const op = await t.signIn();
    const before = await versions(op.workspaceId);
    const res = await put(op, { prices: [price('gpt-4o*'), price('claude-3', 3), price('*', 0)] }).expect(200);
    expect(res.body).toEqual({
      schema_version: 1,
      workspace_id: op.workspaceId,
      revision: 1,
      prices: [price('*', 0), price('claude-3', 3), price('gpt-4o*')],
      updated_at: expect.stringMatching(RFC3339),
      publication: { state: 'published', requested_version: before.snapshot_version + 1, published_version: before.snapshot_version + 1 },
    });
    expect((await get(op).expect(200)).body).toEqual(res.body);

    const pricebook = {
      revision: 1,
      models: {
        '*': { input_micros_usd_per_mtok: 0, output_micros_usd_per_mtok: 0, cached_micros_usd_per_mtok: 0, reasoning_micros_usd_per_mtok: 0 },
        'claude-3': { input_micros_usd_per_mtok: 3_000_000, output_micros_usd_per_mtok: 12_000_000, cached_micros_usd_per_mtok: 1_500_000, reasoning_micros_usd_per_mtok: 12_000_000 },
        'gpt-4o*': { input_micros_usd_per_mtok: 1_000_000, output_micros_usd_per_mtok: 4_000_000, cached_micros_usd_per_mtok: 500_000, reasoning_micros_usd_per_mtok: 4_000_000 },
      },
    };
    expect((await published(op.workspaceId)).pricebook).toEqual(pricebook);
    expect((await internalSnapshot(op.workspaceId)).pricebook).toEqual(pricebook);

    const rows = await audits(op.workspaceId);
    expect(rows).toEqual([{ action: 'pricing.replace', target: op.workspaceId, detail: { snapshot_version: before.snapshot_version + 1 } }]);
  });

  it('replaces as a whole, never merging, and an empty list clears every price', async () => {
    const op = await t.signIn();
    await put(op, { prices: [price('a'), price('b')] }).expect(200);
    const second = await put(op, { prices: [price('c', 2)] }).expect(200);
    expect(second.body.revision).toBe(2);
    expect(second.body.prices).toEqual([price('c', 2)]);
    const cleared = await put(op, { prices: [] }).expect(200);
    expect([cleared.body.revision, cleared.body.prices]).toEqual([3, []]);
    expect((await published(op.workspaceId)).pricebook).toEqual({ revision: 3, models: {} });
  });

  it('accepts the largest exact integer price and a 256-character model', async () => {
    const op = await t.signIn();
    const big = { ...price('m'.repeat(256)), output_micros_usd_per_mtok: Number.MAX_SAFE_INTEGER };
    expect((await put(op, { prices: [big] }).expect(200)).body.prices).toEqual([big]);
  });

  describe('validation (422, nothing written)', () => {
    let op: Operator;
    beforeAll(async () => {
      op = await t.signIn();
      await put(op, { prices: [price('kept')] }).expect(200);
    });
    afterEach(async () => {
      expect((await get(op).expect(200)).body).toMatchObject({ revision: 1, prices: [price('kept')] });
      expect(await audits(op.workspaceId)).toHaveLength(1);
    });

    const refused = async (body: unknown, detail: { loc: (string | number)[]; msg?: string; type: string }[]) => {
      const res = await put(op, body).expect(422);
      expect(res.body.detail).toEqual(detail.map((d) => ({ msg: expect.any(String), ...d })));
    };

    it('requires prices', () => refused({}, [{ loc: ['body', 'prices'], msg: 'field required', type: 'missing' }]));
    it('refuses a body that is not an object', async () => {
      const res = await t.http().put(path(op.workspaceId)).set(bearer(op)).set('content-type', 'application/json').send('[]').expect(422);
      expect(res.body.detail[0].loc).toEqual(['body']);
    });
    it('refuses unknown fields at the top and in an entry', () =>
      refused({ prices: [{ ...price('x'), discount: 1 }], currency: 'usd' }, [
        { loc: ['body', 'currency'], msg: 'extra fields not permitted', type: 'extra_forbidden' },
        { loc: ['body', 'prices', 0, 'discount'], msg: 'extra fields not permitted', type: 'extra_forbidden' },
      ]));
    it('requires every price of an entry', async () => {
      const { cached_micros_usd_per_mtok: _, ...partial } = price('x');
      await refused({ prices: [partial] }, [{ loc: ['body', 'prices', 0, 'cached_micros_usd_per_mtok'], msg: 'field required', type: 'missing' }]);
    });
    it('refuses negative, fractional, textual and imprecise prices', () =>
      refused(
        {
          prices: [
            { ...price('a'), input_micros_usd_per_mtok: -1 },
            { ...price('b'), output_micros_usd_per_mtok: 1.5 },
            { ...price('c'), cached_micros_usd_per_mtok: '100' },
            { ...price('d'), reasoning_micros_usd_per_mtok: 2 ** 53 },
          ],
        },
        [
          { loc: ['body', 'prices', 0, 'input_micros_usd_per_mtok'], type: 'greater_than_equal' },
          { loc: ['body', 'prices', 1, 'output_micros_usd_per_mtok'], type: 'int_type' },
          { loc: ['body', 'prices', 2, 'cached_micros_usd_per_mtok'], type: 'int_type' },
          { loc: ['body', 'prices', 3, 'reasoning_micros_usd_per_mtok'], type: 'less_than_equal' },
        ],
      ));
    it('refuses a model that is not a string', () =>
      refused({ prices: [{ ...price('x'), model: 7 }] }, [{ loc: ['body', 'prices', 0, 'model'], type: 'string_type' }]));
    it('refuses each model outside the pattern rules with its position', () =>
      refused({ prices: ['', 'a*b', '**', '*a*', 'gpt 4', 'tab\tname', 'x'.repeat(257)].map((model) => ({ ...price('x'), model })) }, [
        { loc: ['body', 'prices', 0, 'model'], msg: 'model must be 1-256 characters without whitespace or control characters', type: 'value_error' },
        { loc: ['body', 'prices', 1, 'model'], msg: 'model may contain one * only as the whole pattern, a prefix or a suffix', type: 'value_error' },
        { loc: ['body', 'prices', 2, 'model'], msg: 'model may contain one * only as the whole pattern, a prefix or a suffix', type: 'value_error' },
        { loc: ['body', 'prices', 3, 'model'], msg: 'model may contain one * only as the whole pattern, a prefix or a suffix', type: 'value_error' },
        { loc: ['body', 'prices', 4, 'model'], msg: 'model must be 1-256 characters without whitespace or control characters', type: 'value_error' },
        { loc: ['body', 'prices', 5, 'model'], msg: 'model must be 1-256 characters without whitespace or control characters', type: 'value_error' },
        { loc: ['body', 'prices', 6, 'model'], msg: 'model must be 1-256 characters without whitespace or control characters', type: 'value_error' },
      ]));
    it('refuses a model priced twice', () =>
      refused({ prices: [price('dup'), price('other'), price('dup', 2)] }, [
        { loc: ['body', 'prices', 2, 'model'], msg: 'model must be unique in the pricebook', type: 'value_error' },
      ]));
    it('refuses more than 1024 entries', () =>
      refused({ prices: Array.from({ length: 1025 }, (_, i) => price(`m${i}`)) }, [{ loc: ['body', 'prices'], type: 'too_long' }]));
  });

  it('serializes concurrent replaces under the workspace lock: every one lands whole, revisions 1..n', async () => {
    const op = await t.signIn();
    const bodies = Array.from({ length: 6 }, (_, i) => ({ prices: [price(`model-${i}`, i + 1), price(`shared`, i + 1)] }));
    const results = await Promise.all(bodies.map((b) => put(op, b)));
    expect(results.map((r) => r.status)).toEqual(bodies.map(() => 200));
    expect(results.map((r) => r.body.revision).sort()).toEqual([1, 2, 3, 4, 5, 6]);
    const final = (await get(op).expect(200)).body;
    expect(final.revision).toBe(6);
    const winner = results.find((r) => r.body.revision === 6)!;
    expect(final.prices).toEqual(winner.body.prices);
    expect(await audits(op.workspaceId)).toHaveLength(6);
    expect((await published(op.workspaceId)).pricebook.revision).toBe(6);
  });

  it('answers 500 when the publication state cannot be read', async () => {
    const op = await t.signIn();
    await loseSnapshotVersion(t, op.workspaceId);
    expect((await get(op).expect(500)).body).toEqual({ detail: 'workspace publication state is unavailable' });
  });

  describe('authorization', () => {
    it('GET: any member reads; 401, 404, frozen still reads', async () => {
      await expectAccessMatrix(t, owner, await roleMembers(t, owner), { method: 'get', path, minRole: 'viewer', read: true });
    });
    it('PUT needs pricing.write (admin): 401, 404, 403 for a developer, 409 frozen, nothing written', async () => {
      await expectAccessMatrix(t, owner, await roleMembers(t, owner), { method: 'put', path, body: { prices: [price('x')] }, minRole: 'admin', read: false });
      expect(await audits(owner.workspaceId)).toHaveLength(0);
      expect((await t.db.query(`SELECT count(*)::int AS n FROM pricebooks WHERE workspace_id = $1`, [owner.workspaceId]))[0].n).toBe(0);
    });
  });
});
