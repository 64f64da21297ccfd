import { bearer, Operator, startTestApp, TestApp } from 'test/support/app';
import { freezeWorkspace } from 'test/support/factories';

describe('workspaces', () => {
  let t: TestApp;
  let owner: Operator;
  beforeAll(async () => {
    t = await startTestApp();
    owner = await t.signIn('owner');
  });
  afterAll(() => t.close());

  const auditActions = async (workspaceId: string) =>
    (await t.db.query(`SELECT action FROM audit_events WHERE workspace_id = $1 ORDER BY occurred_at`, [workspaceId])).map((r: { action: string }) => r.action);

  describe('GET /me', () => {
    it('provisions an organization, a default dev workspace and an owner membership on first sign-in', async () => {
      const token = await t.issuer.token({ sub: 'fresh', email: 'fresh@example.com' });
      const res = await t.http().get('/api/v1/me').set(bearer({ token })).expect(200);
      expect(res.body).toEqual({
        user: { id: expect.stringMatching(/^usr_/), email: 'fresh@example.com' },
        workspaces: [{ id: expect.stringMatching(/^ws_/), org_id: expect.stringMatching(/^org_/), slug: 'default', env: 'dev', frozen: false, role: 'owner' }],
        default_workspace_id: res.body.workspaces[0].id,
      });
      const again = await t.http().get('/api/v1/me').set(bearer({ token })).expect(200);
      expect(again.body).toEqual(res.body);
      expect(await auditActions(res.body.default_workspace_id)).toEqual(['workspace.create']);
    });

    it('creates exactly one organization and workspace under ten parallel first calls', async () => {
      const token = await t.issuer.token({ sub: 'racer' });
      const results = await Promise.all(Array.from({ length: 10 }, () => t.http().get('/api/v1/me').set(bearer({ token }))));
      expect(results.map((r) => r.status)).toEqual(Array(10).fill(200));
      const userId = results[0].body.user.id;
      const [{ orgs }] = await t.db.query(`SELECT count(*)::int AS orgs FROM organization_members WHERE user_id = $1`, [userId]);
      const [{ workspaces }] = await t.db.query(`SELECT count(*)::int AS workspaces FROM workspace_members WHERE user_id = $1`, [userId]);
      expect({ orgs, workspaces }).toEqual({ orgs: 1, workspaces: 1 });
      expect(new Set(results.map((r) => r.body.default_workspace_id)).size).toBe(1);
    });

    it('publishes the first snapshot after commit', async () => {
      const op = await t.signIn();
      const [row] = await t.db.query(`SELECT snapshot_version, published_version FROM workspaces WHERE id = $1`, [op.workspaceId]);
      expect(row).toEqual({ snapshot_version: 1, published_version: 1 });
    });
  });

  describe('POST /workspaces', () => {
    it('creates a workspace with the creator as owner, audit row and version-1 publication', async () => {
      const res = await t.http().post('/api/v1/workspaces').set(bearer(owner)).send({ org_id: owner.orgId, slug: 'payments', env: 'prod' }).expect(201);
      expect(res.body).toEqual({ id: expect.stringMatching(/^ws_[0-9a-f]{24}$/), org_id: owner.orgId, slug: 'payments', env: 'prod', frozen: false, snapshot_version: 1 });
      expect(res.headers['cache-control']).toBe('no-store');
      const [member] = await t.db.query(`SELECT role FROM workspace_members WHERE workspace_id = $1 AND user_id = $2`, [res.body.id, owner.userId]);
      expect(member.role).toBe('owner');
      const [audit] = await t.db.query(`SELECT actor_user_id, action, target, detail FROM audit_events WHERE workspace_id = $1`, [res.body.id]);
      expect(audit).toEqual({ actor_user_id: owner.userId, action: 'workspace.create', target: res.body.id, detail: { env: 'prod', snapshot_version: 1 } });
      const [pub] = await t.db.query(`SELECT published_version FROM workspaces WHERE id = $1`, [res.body.id]);
      expect(pub.published_version).toBe(1);
    });

    it('defaults env to dev', async () => {
      const res = await t.http().post('/api/v1/workspaces').set(bearer(owner)).send({ org_id: owner.orgId, slug: 'defaults' }).expect(201);
      expect(res.body.env).toBe('dev');
    });

    it('answers 409 for a duplicate slug in the organization and writes nothing', async () => {
      await t.http().post('/api/v1/workspaces').set(bearer(owner)).send({ org_id: owner.orgId, slug: 'dup' }).expect(201);
      const before = await t.db.query(`SELECT count(*)::int AS n FROM workspaces`);
      const res = await t.http().post('/api/v1/workspaces').set(bearer(owner)).send({ org_id: owner.orgId, slug: 'dup', env: 'stage' }).expect(409);
      expect(res.body).toEqual({ detail: 'workspace slug already exists in this org' });
      expect(await t.db.query(`SELECT count(*)::int AS n FROM workspaces`)).toEqual(before);
    });

    it('lets exactly one of two concurrent creations of the same slug win', async () => {
      const send = () => t.http().post('/api/v1/workspaces').set(bearer(owner)).send({ org_id: owner.orgId, slug: 'race' });
      const statuses = (await Promise.all([send(), send(), send()])).map((r) => r.status).sort();
      expect(statuses).toEqual([201, 409, 409]);
    });

    it('answers 400 for a bad env', async () => {
      for (const env of ['production', 'DEV', 3, null]) {
        const res = await t.http().post('/api/v1/workspaces').set(bearer(owner)).send({ org_id: owner.orgId, slug: `bad-env-${String(env)}`, env }).expect(400);
        expect(res.body).toEqual({ detail: 'env must be one of dev, stage, prod' });
      }
    });

    it('answers 403 outside the caller\'s organizations, also for an organization that does not exist', async () => {
      const other = await t.signIn();
      for (const orgId of [other.orgId, 'org_doesnotexist']) {
        const res = await t.http().post('/api/v1/workspaces').set(bearer(owner)).send({ org_id: orgId, slug: 'intruder' }).expect(403);
        expect(res.body).toEqual({ detail: 'not a member of that organization' });
      }
    });

    it('answers 422 with field-shaped detail for length failures, missing and extra fields', async () => {
      const cases: [object, unknown[]][] = [
        [{ org_id: '', slug: 's' }, ['body', 'org_id']],
        [{ org_id: 'o'.repeat(65), slug: 's' }, ['body', 'org_id']],
        [{ org_id: owner.orgId, slug: 's'.repeat(129) }, ['body', 'slug']],
        [{ org_id: owner.orgId }, ['body', 'slug']],
        [{ org_id: owner.orgId, slug: 'x', extra: 1 }, ['body', 'extra']],
      ];
      for (const [body, loc] of cases) {
        const res = await t.http().post('/api/v1/workspaces').set(bearer(owner)).send(body).expect(422);
        expect(res.body.detail).toEqual(expect.arrayContaining([expect.objectContaining({ loc, msg: expect.any(String), type: expect.any(String) })]));
      }
      const missing = await t.http().post('/api/v1/workspaces').set(bearer(owner)).send({ org_id: owner.orgId }).expect(422);
      expect(missing.body.detail).toEqual([{ loc: ['body', 'slug'], msg: 'field required', type: 'missing' }]);
    });

    it('answers 400 for malformed JSON', async () => {
      const res = await t.http().post('/api/v1/workspaces').set(bearer(owner)).set('Content-Type', 'application/json').send('{"org_id": ').expect(400);
      expect(res.body).toEqual({ detail: 'malformed JSON body' });
      expect(res.headers['cache-control']).toBe('no-store');
    });

    it('answers 401 without a session', async () => {
      await t.http().post('/api/v1/workspaces').send({ org_id: owner.orgId, slug: 'anon' }).expect(401, { detail: 'session required' });
    });
  });

  describe('GET /workspaces', () => {
    it('lists only the caller\'s workspaces and narrows by org_id', async () => {
      const solo = await t.signIn();
      const res = await t.http().get('/api/v1/workspaces').set(bearer(solo)).expect(200);
      expect(res.body).toEqual({ workspaces: [{ id: solo.workspaceId, org_id: solo.orgId, slug: 'default', env: 'dev', frozen: false, snapshot_version: 1 }] });
      const narrowed = await t.http().get('/api/v1/workspaces').query({ org_id: 'org_other' }).set(bearer(solo)).expect(200);
      expect(narrowed.body).toEqual({ workspaces: [] });
    });

    it('answers 422 with field-shaped detail for an org_id filter over 64 characters', async () => {
      const res = await t.http().get('/api/v1/workspaces').query({ org_id: 'o'.repeat(65) }).set(bearer(owner)).expect(422);
      expect(res.body).toEqual({ detail: [{ loc: ['query', 'org_id'], msg: 'org_id must be shorter than or equal to 64 characters', type: 'string_too_long' }] });
    });
  });

  describe('GET /workspaces/{ws}, overview and client endpoints', () => {
    it('answers the workspace document', async () => {
      const res = await t.http().get(`/api/v1/workspaces/${owner.workspaceId}`).set(bearer(owner)).expect(200);
      expect(res.body).toEqual({ id: owner.workspaceId, org_id: owner.orgId, slug: 'default', env: 'dev', frozen: false, snapshot_version: 1 });
    });

    it('answers the same 404 for a nonexistent workspace and a non-member', async () => {
      const stranger = await t.signIn();
      for (const path of ['', '/overview', '/mcp', '/members', '/audit?from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z']) {
        const missing = await t.http().get(`/api/v1/workspaces/ws_000000000000000000000000${path}`).set(bearer(stranger)).expect(404);
        const foreign = await t.http().get(`/api/v1/workspaces/${owner.workspaceId}${path}`).set(bearer(stranger)).expect(404);
        expect(foreign.body).toEqual({ detail: 'workspace not found' });
        expect(foreign.body).toEqual(missing.body);
        expect(foreign.headers['cache-control']).toBe('no-store');
      }
    });

    it('reports zeroes in the overview of an empty workspace', async () => {
      const op = await t.signIn();
      const res = await t.http().get(`/api/v1/workspaces/${op.workspaceId}/overview`).set(bearer(op)).expect(200);
      expect(res.body).toEqual({
        workspace: { id: op.workspaceId, org_id: op.orgId, slug: 'default', env: 'dev', frozen: false, snapshot_version: 1 },
        keys: { active: 0, total: 0 },
        connectors: { total: 0, connections_active: 0 },
        policy: { published: false, revision_id: null, published_at: null, bundle_hash: null },
        receipts: { total: 0, last_at: null },
      });
    });

    it('answers the client endpoints document without any key material', async () => {
      const res = await t.http().get(`/api/v1/workspaces/${owner.workspaceId}/mcp`).set(bearer(owner)).expect(200);
      expect(res.body).toEqual({
        workspace_id: owner.workspaceId,
        env: 'dev',
        gateway_url: 'http://127.0.0.1:8080',
        mcp_url: 'http://127.0.0.1:8080/mcp',
        llm_base_url: 'http://127.0.0.1:8080/v1',
        key_prefix: 'ob_test',
      });
      const prod = await t.http().post('/api/v1/workspaces').set(bearer(owner)).send({ org_id: owner.orgId, slug: 'prod-endpoints', env: 'prod' }).expect(201);
      const prodDoc = await t.http().get(`/api/v1/workspaces/${prod.body.id}/mcp`).set(bearer(owner)).expect(200);
      expect(prodDoc.body.key_prefix).toBe('ob_live');
    });

    it('keeps reads open in a frozen workspace', async () => {
      const op = await t.signIn();
      await freezeWorkspace(t, op.workspaceId);
      const res = await t.http().get(`/api/v1/workspaces/${op.workspaceId}`).set(bearer(op)).expect(200);
      expect(res.body.frozen).toBe(true);
      await t.http().get(`/api/v1/workspaces/${op.workspaceId}/overview`).set(bearer(op)).expect(200);
      await t.http().get(`/api/v1/workspaces/${op.workspaceId}/audit`).query({ from: '2020-01-01T00:00:00Z', to: '2100-01-01T00:00:00Z' }).set(bearer(op)).expect(200);
    });
  });
});

describe('framework errors keep the detail shape', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('answers an unknown route 404 with a detail and no-store under /api/v1', async () => {
    const res = await t.http().get('/api/v1/nope').expect(404);
    expect(res.body).toEqual({ detail: 'Not Found' });
    expect(res.headers['cache-control']).toBe('no-store');
  });

  it('answers an oversize body 413 without parsing it', async () => {
    const op = await t.signIn();
    const res = await t.http().post('/api/v1/workspaces').set(bearer(op)).send({ org_id: op.orgId, slug: 'x'.repeat(2 * 1024 * 1024) }).expect(413);
    expect(res.body).toEqual({ detail: 'request body too large' });
  });

  it('answers a JSON array body 422 with a body-level entry', async () => {
    const op = await t.signIn();
    const res = await t.http().post('/api/v1/workspaces').set(bearer(op)).send([1, 2]).expect(422);
    expect(res.body).toEqual({ detail: [{ loc: ['body'], msg: 'value must be a JSON object', type: 'model_type' }] });
  });
});
