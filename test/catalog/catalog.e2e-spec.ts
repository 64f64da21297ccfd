import { bearer, Operator, startTestApp, TestApp } from 'test/support/app';
import { GatewayEmulator } from 'test/support/gateway-emulator';
import { WorkspacesService } from 'src/modules/workspaces/workspaces.service';

describe('connector catalog', () => {
  let t: TestApp;
  let gw: GatewayEmulator;
  let owner: Operator;
  let all: { slug: string; sources: { provider: string }[]; categories: string[] }[];
  const catalog = (query = '', op: Operator = owner) => t.http().get(`/api/v1/workspaces/${op.workspaceId}/catalog${query}`).set(bearer(op));

  beforeAll(async () => {
    gw = await GatewayEmulator.start();
    t = await startTestApp({ GATEWAY_URL: gw.url, OAUTH_DEFAULT_CLIENT_ID: 'default-client' });
    owner = await t.signIn();
    all = (await catalog().expect(200)).body.connectors;
  });
  afterAll(async () => {
    await t.close();
    await gw.stop();
  });

  describe('unfiltered', () => {
    it('returns the whole frozen index with full sources and this workspace connections', async () => {
      const res = await catalog().expect(200);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.body).toEqual({ schema_version: 1, generated_at: '2025-11-20T00:00:00Z', connectors: expect.any(Array) });
      expect(res.body.connectors.length).toBeGreaterThanOrEqual(40);
      const github = res.body.connectors.find((c: { slug: string }) => c.slug === 'github');
      expect(github).toEqual({
        slug: 'github',
        display_name: 'GitHub',
        description: expect.any(String),
        categories: ['source_hosting', 'issue_tracking'],
        default_tier: 'native',
        sources: [
          { provider: 'native', auth_modes: ['oauth2'], mcp: true, allowed_mcp_origins: ['https://api.githubcopilot.com'], upstream_id: 'github' },
          { provider: 'broker_a', auth_modes: ['oauth2'], mcp: true, allowed_mcp_origins: ['https://mcp.broker-a.example'], upstream_id: 'github' },
          { provider: 'broker_b', auth_modes: ['oauth2'], mcp: true, allowed_mcp_origins: ['https://mcp.broker-b.example'], upstream_id: 'github' },
        ],
        connections: [],
      });
      expect(JSON.stringify(res.body)).not.toMatch(/authorize_url|token_url|native_profile|tools/);
    });

    it('carries the workspace connections of a slug', async () => {
      const op = await t.signIn();
      const started = await t.http().post(`/api/v1/workspaces/${op.workspaceId}/connections`).set(bearer(op)).send({ slug: 'stripe', source: 'native' }).expect(200);
      const res = await catalog('', op).expect(200);
      const stripe = res.body.connectors.find((c: { slug: string }) => c.slug === 'stripe');
      expect(stripe.connections).toEqual([started.body.connection]);
      const browse = await catalog('?q=stripe', op).expect(200);
      expect(browse.body.connectors[0].connections).toEqual([started.body.connection]);
      // Other workspaces never see it.
      expect((await catalog('?q=stripe').expect(200)).body.connectors[0].connections).toEqual([]);
    });
  });

  describe('browse', () => {
    it('answers the browse shape with gallery cards, categories, lanes, overlap and page', async () => {
      const res = await catalog('?limit=5').expect(200);
      expect(Object.keys(res.body).sort()).toEqual(['categories', 'connectors', 'generated_at', 'lane_overlap', 'lanes', 'page', 'schema_version']);
      expect(res.body.page).toEqual({ total: all.length, limit: 5, offset: 0, next_cursor: expect.any(String) });
      expect(res.body.page.next_cursor.length).toBeLessThanOrEqual(128);
      expect(res.body.connectors.map((c: { slug: string }) => c.slug)).toEqual(all.slice(0, 5).map((c) => c.slug));
      for (const card of res.body.connectors) {
        expect(Object.keys(card).sort()).toEqual(['categories', 'connections', 'default_tier', 'description', 'display_name', 'slug', 'sources']);
        for (const source of card.sources) expect(Object.keys(source).sort()).toEqual(['auth_modes', 'provider']);
      }
      expect(res.body.lanes.map((l: { source: string }) => l.source)).toEqual(['native', 'broker_a', 'broker_b']);
      for (const lane of res.body.lanes) expect(lane.count).toBe(all.filter((c) => c.sources.some((s) => s.provider === lane.source)).length);
      const brokers = (c: (typeof all)[number]) => c.sources.filter((s) => s.provider !== 'native').length;
      expect(res.body.lane_overlap).toBe(all.filter((c) => brokers(c) > 1).length);
      const counts = res.body.categories as { name: string; count: number }[];
      expect(counts.reduce((n, c) => n + c.count, 0)).toBe(all.reduce((n, c) => n + c.categories.length, 0));
      for (let i = 1; i < counts.length; i++) {
        const [a, b] = [counts[i - 1], counts[i]];
        expect(a.count > b.count || (a.count === b.count && a.name < b.name)).toBe(true);
      }
    });

    it('defaults to 24 per page and walks every row once with the cursor', async () => {
      const first = await catalog('?source=native').expect(200);
      expect(first.body.page.limit).toBe(24);
      const seen: string[] = [];
      let res = await catalog('?source=native&limit=7').expect(200);
      for (;;) {
        seen.push(...res.body.connectors.map((c: { slug: string }) => c.slug));
        if (!res.body.page.next_cursor) break;
        res = await catalog(`?source=native&limit=7&cursor=${res.body.page.next_cursor}`).expect(200);
        expect(res.body.page.offset).toBe(seen.length);
      }
      expect(seen).toEqual(all.filter((c) => c.sources.some((s) => s.provider === 'native')).map((c) => c.slug));
    });

    it('filters by text, category and lane; lanes count the text and category match', async () => {
      const text = await catalog('?q=GIT').expect(200);
      expect(text.body.connectors.map((c: { slug: string }) => c.slug)).toEqual(expect.arrayContaining(['github', 'gitlab']));
      const category = await catalog('?category=payments').expect(200);
      expect(category.body.connectors.every((c: { categories: string[] }) => c.categories.includes('payments'))).toBe(true);
      const lane = await catalog('?category=payments&source=broker_b').expect(200);
      expect(lane.body.connectors.every((c: { sources: { provider: string }[] }) => c.sources.some((s) => s.provider === 'broker_b'))).toBe(true);
      expect(lane.body.lanes).toEqual(category.body.lanes);
      expect(lane.body.page.total).toBe(lane.body.lanes[2].count);
    });

    it('answers an empty page with the real total past the end, and an empty page for an unused category', async () => {
      const past = await catalog('?offset=100000').expect(200);
      expect(past.body.connectors).toEqual([]);
      expect(past.body.page).toEqual({ total: all.length, limit: 24, offset: 100000, next_cursor: null });
      const unused = await catalog('?category=nothing_here').expect(200);
      expect(unused.body.connectors).toEqual([]);
      expect(unused.body.page.total).toBe(0);
      expect(unused.body.lanes).toEqual([
        { source: 'native', count: 0 },
        { source: 'broker_a', count: 0 },
        { source: 'broker_b', count: 0 },
      ]);
      expect(unused.body.lane_overlap).toBe(0);
    });

    it('refuses a cursor with an offset, a malformed cursor, and a cursor of another query or lane', async () => {
      const cursor = (await catalog('?limit=2&source=broker_a').expect(200)).body.page.next_cursor;
      expect((await catalog(`?cursor=${cursor}&offset=2&source=broker_a`).expect(400)).body).toEqual({ detail: 'provide either cursor or offset, not both' });
      for (const bad of ['abc', 'not-a-cursor!', Buffer.from('{"v":1,"o":2}').toString('base64url'), `${cursor}x`]) {
        expect((await catalog(`?cursor=${encodeURIComponent(bad)}&source=broker_a`).expect(400)).body).toEqual({ detail: 'malformed catalog cursor' });
      }
      expect((await catalog(`?cursor=${cursor}&source=broker_b`).expect(400)).body).toEqual({ detail: 'catalog cursor does not match this query' });
      expect((await catalog(`?cursor=${cursor}`).expect(400)).body).toEqual({ detail: 'catalog cursor does not match this query' });
      expect((await catalog(`?cursor=${cursor}&source=broker_a&q=x`).expect(400)).body).toEqual({ detail: 'catalog cursor does not match this query' });
      await catalog(`?cursor=${cursor}&source=broker_a`).expect(200);
    });

    it('answers 422 for an unknown lane and out-of-range parameters', async () => {
      expect((await catalog('?source=broker_c').expect(422)).body).toEqual({ detail: [{ loc: ['query', 'source'], msg: 'unknown catalog source', type: 'enum' }] });
      for (const [query, field] of [
        ['limit=0', 'limit'],
        ['limit=101', 'limit'],
        ['limit=abc', 'limit'],
        ['offset=-1', 'offset'],
        ['offset=100001', 'offset'],
        [`q=${'a'.repeat(65)}`, 'q'],
        [`category=${'a'.repeat(65)}`, 'category'],
        [`cursor=${'a'.repeat(129)}`, 'cursor'],
      ]) {
        const res = await catalog(`?${query}`).expect(422);
        expect(res.body.detail[0].loc).toEqual(['query', field]);
      }
    });
  });

  describe('single entry', () => {
    it('returns the row without connections, or 404 unknown catalog slug', async () => {
      const res = await t.http().get(`/api/v1/workspaces/${owner.workspaceId}/catalog/stripe`).set(bearer(owner)).expect(200);
      expect(res.body).toEqual({ ...all.find((c) => c.slug === 'stripe'), connections: undefined });
      expect(res.body).not.toHaveProperty('connections');
      expect((await t.http().get(`/api/v1/workspaces/${owner.workspaceId}/catalog/nope`).set(bearer(owner)).expect(404)).body).toEqual({ detail: 'unknown catalog slug' });
    });
  });

  describe('authorization', () => {
    it('answers 401 without a session, 404 for a non-member as for a missing workspace, and serves any role, even frozen', async () => {
      for (const path of ['catalog', 'catalog/github']) {
        expect((await t.http().get(`/api/v1/workspaces/${owner.workspaceId}/${path}`).expect(401)).body).toEqual({ detail: 'session required' });
        const stranger = await t.signIn();
        const a = await t.http().get(`/api/v1/workspaces/${owner.workspaceId}/${path}`).set(bearer(stranger)).expect(404);
        const b = await t.http().get(`/api/v1/workspaces/ws_000000000000000000000000/${path}`).set(bearer(stranger)).expect(404);
        expect(a.body).toEqual({ detail: 'workspace not found' });
        expect(b.body).toEqual(a.body);
      }
      const frozen = await t.signIn();
      const viewer = await t.member(frozen, 'viewer');
      await t.app.get(WorkspacesService).setFlag(frozen.workspaceId, 'frozen', true);
      await catalog('?limit=1', viewer).expect(200);
      await t.http().get(`/api/v1/workspaces/${frozen.workspaceId}/catalog/github`).set(bearer(viewer)).expect(200);
    });
  });
});
