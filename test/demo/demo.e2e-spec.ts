import { execFile } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { DEMO_EMAIL, DEMO_SUBJECT } from 'src/modules/demo/demo-data';
import { DemoSeeder, DemoSeedResult, RECEIPT_COUNT } from 'src/modules/demo/demo.seeder';
import { bearer, Operator, SERVICE_SECRET, startTestApp, TestApp } from 'test/support/app';
import { GatewayEmulator } from 'test/support/gateway-emulator';
import { freezeWorkspace } from 'test/support/factories';

const ROOT = join(__dirname, '..', '..');

/** A port nothing listens on: the gateway "does not answer". */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function cli(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['-r', require.resolve('ts-node/register/transpile-only'), join(ROOT, 'src/cli.ts'), ...args],
      { cwd: ROOT, env: { PATH: process.env.PATH, NODE_PATH: ROOT, ...env } },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('demo:seed', () => {
  describe('with the gateway emulator and Redis', () => {
    let gw: GatewayEmulator;
    let t: TestApp;
    let owner: Operator;
    let result: DemoSeedResult;
    const get = (path: string, op: Operator = owner) => t.http().get(`/api/v1/workspaces/${op.workspaceId}${path}`).set(bearer(op)).expect(200);

    beforeAll(async () => {
      gw = await GatewayEmulator.start();
      t = await startTestApp({ GATEWAY_URL: gw.url });
      owner = await t.signIn();
      result = await t.app.get(DemoSeeder).seed(owner.workspaceId);
    });
    afterAll(async () => {
      await t.close();
      await gw.stop();
    });

    it('acts as the workspace owner and reports what it wrote, without a note', () => {
      expect(result).toMatchObject({ workspace_id: owner.workspaceId, operator: { user_id: owner.userId }, notes: [] });
      expect(JSON.stringify(result)).not.toMatch(/ob_(test|live)_|rk_test_|sk-demo/);
    });

    it('mints three active keys and one revoked key', async () => {
      const { keys } = (await get('/keys')).body;
      expect(keys.map((k: { agent_id: string; status: string }) => [k.agent_id, k.status])).toEqual([
        ['support-bot', 'active'],
        ['billing-agent', 'active'],
        ['research-agent', 'active'],
        ['legacy-agent', 'revoked'],
      ]);
      expect(keys[1]).toMatchObject({ allowed_tools: ['stripe.*'], attributes: { team: 'payments' } });
    });

    it('publishes a policy revision that the snapshot carries', async () => {
      const policy = (await get('/policy')).body;
      expect(policy).toMatchObject({ current_revision_id: result.policy_revision_id, validation_state: 'valid', publication: { state: 'published' } });
      expect(policy.cedar_text).toContain('payments');
      const pricing = (await get('/pricing')).body;
      expect(pricing.prices.map((p: { model: string }) => p.model)).toEqual(['claude-*', 'gpt-4o*']);
    });

    it('creates the approval policies and approvals in every state', async () => {
      const { approval_policies } = (await get('/approval-policies')).body;
      expect(approval_policies.map((p: { name: string; status: string }) => [p.name, p.status])).toEqual([
        ['payments', 'active'],
        ['production-safety', 'active'],
      ]);
      const { approvals } = (await get('/approvals')).body;
      const states = approvals.map((a: { tool: string; decision_status: string; execution_status: string }) => [a.tool, a.decision_status, a.execution_status]);
      expect(states.sort()).toEqual(
        [
          ['github.create_issue', 'denied', 'not_requested'],
          ['stripe.create_refund', 'approved', 'succeeded'],
          ['stripe.create_refund', 'pending', 'not_requested'],
          ['stripe.create_refund', 'pending', 'not_requested'],
        ].sort(),
      );
      const pending = (await get('/approvals?decision_status=pending')).body.approvals;
      expect(pending.every((a: { can_vote: boolean }) => a.can_vote)).toBe(true);
    });

    it('connects Stripe and a model route through the gateway seal', async () => {
      const { connections } = (await get('/connections')).body;
      expect(connections).toEqual([expect.objectContaining({ connector_slug: 'stripe', status: 'active', last4: '0001' })]);
      const models = (await get('/model-providers')).body.connections;
      expect(models).toEqual([expect.objectContaining({ provider: 'provider_a', model_pattern: 'gpt-*', status: 'active' })]);
      expect(result.connections.sort()).toEqual([connections[0].connection_id, models[0].connection_id].sort());
      expect(gw.callsTo('/internal/v1/credentials/seal').map((c) => [c.body.secret_kind, c.status])).toEqual([
        ['api_key', 200],
        ['model_api_key', 200],
      ]);
    });

    it('projects receipts and usage written to the streams', async () => {
      const receipts = (await get(`/receipts?limit=50`)).body.receipts;
      expect(receipts).toHaveLength(RECEIPT_COUNT);
      const day = 24 * 3600_000;
      const window = `from=${new Date(Date.now() - 2 * day).toISOString()}&to=${new Date(Date.now() + 3600_000).toISOString()}`;
      const usage = (await get(`/usage?${window}&group_by=model`)).body;
      expect(Number(usage.totals.usd_micros)).toBeGreaterThan(0);
      expect(usage.groups.map((g: { value: string | null }) => g.value)).toEqual(expect.arrayContaining(['gpt-4o']));
      const overview = (await get('/overview')).body;
      expect(overview).toMatchObject({ keys: { active: 3, total: 4 }, receipts: { total: RECEIPT_COUNT }, policy: { published: true } });
    });

    it('a second run keeps what exists and adds more activity', async () => {
      const again = await t.app.get(DemoSeeder).seed(owner.workspaceId);
      expect(again.notes).toEqual([
        'approval policy payments already exists: kept',
        'approval policy production-safety already exists: kept',
        'stripe is already connected: kept',
        'model pattern gpt-* is already routed: kept',
      ]);
      expect((await get('/keys')).body.keys).toHaveLength(8);
      expect((await get('/connections')).body.connections).toHaveLength(1);
      expect((await get('/receipts?limit=50')).body.receipts).toHaveLength(2 * RECEIPT_COUNT);
    });

    it('without a workspace, provisions the demo operator, who then signs in to a seeded workspace', async () => {
      const demo = await t.app.get(DemoSeeder).seed();
      const token = await t.issuer.token({ sub: DEMO_SUBJECT, email: DEMO_EMAIL });
      const me = (await t.http().get('/api/v1/me').set('Authorization', `Bearer ${token}`).expect(200)).body;
      expect(me).toMatchObject({ user: { id: demo.operator.user_id, email: DEMO_EMAIL }, default_workspace_id: demo.workspace_id });
      const keys = (await t.http().get(`/api/v1/workspaces/${demo.workspace_id}/keys`).set('Authorization', `Bearer ${token}`).expect(200)).body.keys;
      expect(keys).toHaveLength(4);
    });

    it('refuses an unknown workspace and writes nothing', async () => {
      await expect(t.app.get(DemoSeeder).seed('ws_000000000000000000000000')).rejects.toThrow('workspace not found: ws_000000000000000000000000');
    });

    it('answers 409 for a frozen workspace and writes nothing', async () => {
      const other = await t.signIn();
      await freezeWorkspace(t, other.workspaceId);
      await expect(t.app.get(DemoSeeder).seed(other.workspaceId)).rejects.toThrow('workspace is frozen');
      expect(await t.db.query(`SELECT id FROM virtual_keys WHERE workspace_id = $1`, [other.workspaceId])).toEqual([]);
    });
  });

  describe('without a gateway or Redis', () => {
    let t: TestApp;
    let owner: Operator;
    beforeAll(async () => {
      t = await startTestApp({ GATEWAY_URL: `http://127.0.0.1:${await closedPort()}`, REDIS_URL: undefined });
      owner = await t.signIn();
    });
    afterAll(() => t.close());

    it('seeds everything else and says what it skipped', async () => {
      const result = await t.app.get(DemoSeeder).seed(owner.workspaceId);
      expect(result.notes).toEqual([
        `connections skipped: the gateway at ${t.config.gatewayUrl} does not answer (start the emulator with \`npm run emulator\` and set GATEWAY_URL)`,
        'receipts and usage skipped: REDIS_URL is not set (the streams need Redis)',
      ]);
      expect(result).toMatchObject({ connections: [], receipts_written: 0, usage_events_written: 0 });
      expect(await t.db.query(`SELECT id FROM connections WHERE workspace_id = $1`, [owner.workspaceId])).toEqual([]);
      const approvals = (await t.http().get(`/api/v1/workspaces/${owner.workspaceId}/approvals`).set(bearer(owner)).expect(200)).body.approvals;
      expect(approvals).toHaveLength(4);
    });

    it('explains a gateway that refuses the seal (another service secret)', async () => {
      const gw = await GatewayEmulator.start('another-secret-0123456789abcdef-xyz');
      const other = await startTestApp({ GATEWAY_URL: gw.url });
      try {
        const op = await other.signIn();
        const result = await other.app.get(DemoSeeder).seed(op.workspaceId);
        expect(result.notes).toEqual([
          'connections skipped: the gateway refused the seal (HTTP 401; is SERVICE_JWT_SECRET the same on both sides?) (start the emulator with `npm run emulator` and set GATEWAY_URL)',
        ]);
        expect(await other.db.query(`SELECT status, credential_envelope FROM connections WHERE workspace_id = $1`, [op.workspaceId])).toEqual([{ status: 'pending', credential_envelope: null }]);
      } finally {
        await other.close();
        await gw.stop();
      }
    });
  });

  describe('the CLI command', () => {
    let gw: GatewayEmulator;
    let t: TestApp;
    beforeAll(async () => {
      gw = await GatewayEmulator.start();
      t = await startTestApp({ GATEWAY_URL: gw.url });
    });
    afterAll(async () => {
      await t.close();
      await gw.stop();
    });

    it('seeds the demo operator through `npm run cli -- demo:seed` and prints how to explore', async () => {
      const env = {
        DATABASE_URL: t.config.databaseUrl!,
        REDIS_URL: t.config.redisUrl!,
        REDIS_PREFIX: t.config.redisPrefix,
        IDENTITY_ISSUER: t.issuer.url,
        SERVICE_JWT_SECRET: SERVICE_SECRET,
        GATEWAY_URL: gw.url,
        LOG_LEVEL: 'error',
      };
      const res = await cli(['demo:seed'], env);
      expect(res).toMatchObject({ code: 0, stderr: '' });
      const [user] = await t.db.query(`SELECT id FROM users WHERE issuer = $1 AND subject = $2`, [t.issuer.url, DEMO_SUBJECT]);
      const [member] = await t.db.query(`SELECT workspace_id FROM workspace_members WHERE user_id = $1`, [user.id]);
      expect(res.stdout).toContain(`seeded ${member.workspace_id} as ${DEMO_EMAIL} (${user.id})`);
      expect(res.stdout).toContain(`streams: ${RECEIPT_COUNT} receipts to ${t.config.redisPrefix}:receipts`);
      expect(res.stdout).toContain(`curl -s "${t.config.publicUrl}/api/v1/workspaces/${member.workspace_id}/overview"`);
      expect(res.stdout).not.toMatch(/note:/);
      const token = await t.issuer.token({ sub: DEMO_SUBJECT, email: DEMO_EMAIL });
      const receipts = (await t.http().get(`/api/v1/workspaces/${member.workspace_id}/receipts?limit=50`).set('Authorization', `Bearer ${token}`).expect(200)).body.receipts;
      expect(receipts).toHaveLength(RECEIPT_COUNT);
    });

    it('exits non-zero with one line for an unknown workspace or option', async () => {
      const env = { DATABASE_URL: t.config.databaseUrl!, LOG_LEVEL: 'error' };
      for (const args of [['demo:seed', '--workspace', 'ws_missing'], ['demo:seed', '--nope']]) {
        const res = await cli(args, env);
        expect(res.code).not.toBe(0);
        expect(res.stderr.trim().split('\n')).toHaveLength(1);
      }
    });
  });
});
