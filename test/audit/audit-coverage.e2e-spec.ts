import { AuditTrailService } from 'src/modules/audit/audit-trail.service';
import { AUDIT_ACTIONS, AuditAction } from 'src/modules/audit/audit-vocabulary';
import { routes } from 'src/openapi/openapi';
import { bearer, Operator, startTestApp, TestApp } from 'test/support/app';
import { GatewayEmulator } from 'test/support/gateway-emulator';

/**
 * The reviewed table of every route that changes state (core spec section 6: every operator
 * mutation writes an audit row in the transaction of the act). Each one writes exactly the audit
 * rows named here, or stands on the exceptions list below with the reason. A new state-changing
 * route fails the first test until it is reviewed into one of the two.
 */
const AUDITED: Record<string, AuditAction[]> = {
  'POST /api/v1/workspaces': ['workspace.create'],
  'POST /api/v1/workspaces/{ws}/keys': ['key.mint'],
  'POST /api/v1/workspaces/{ws}/keys/{keyId}/rotate': ['key.rotate'],
  'POST /api/v1/workspaces/{ws}/keys/{keyId}/revoke': ['key.revoke'],
  'PUT /api/v1/workspaces/{ws}/members/{userId}': ['membership.grant'],
  'DELETE /api/v1/workspaces/{ws}/members/{userId}': ['membership.revoke'],
  'PUT /api/v1/workspaces/{ws}/policy': ['policy.draft.store'],
  'POST /api/v1/workspaces/{ws}/policy/publish': ['policy.publish'],
  'PUT /api/v1/workspaces/{ws}/pricing': ['pricing.replace'],
  'POST /api/v1/workspaces/{ws}/route-qualifiers': ['route_qualifier.upsert'],
  'DELETE /api/v1/workspaces/{ws}/route-qualifiers/{qualifierId}': ['route_qualifier.delete'],
  'POST /api/v1/workspaces/{ws}/approval-policies': ['approval_policy.create'],
  'PUT /api/v1/workspaces/{ws}/approval-policies/{policyId}': ['approval_policy.revise'],
  'POST /api/v1/workspaces/{ws}/approval-policies/{policyId}/disable': ['approval_policy.disable'],
  // Two acts in two transactions: the pending connection, then its key once the gateway sealed it.
  'POST /api/v1/workspaces/{ws}/model-providers': ['model_connection.start', 'model_connection.credential.store'],
  'POST /api/v1/workspaces/{ws}/model-providers/{connectionId}/disable': ['model_connection.disable'],
  // Proven in their own suites (they need the catalog, OAuth and federated flows of test/connections/connections.e2e-spec.ts,
  // test/connections/oauth.e2e-spec.ts and test/webhooks/webhooks.e2e-spec.ts), which assert the row each one writes.
  'POST /api/v1/workspaces/{ws}/catalog-providers': ['catalog.provider.register'],
  'POST /api/v1/workspaces/{ws}/connections': ['connection.start'],
  'POST /api/v1/workspaces/{ws}/connections/{connectionId}/restricted-key': ['connection.credential.store'],
  'POST /api/v1/workspaces/{ws}/connections/{connectionId}/federated-complete': ['connection.federated.complete'],
  'POST /api/v1/workspaces/{ws}/connections/{connectionId}/reconnect': ['connection.reconnect'],
  'POST /api/v1/workspaces/{ws}/connections/{connectionId}/disable': ['connection.disable'],
  'POST /api/v1/workspaces/{ws}/connections/{connectionId}/purge-credential': ['connection.credential.purge'],
  'DELETE /api/v1/workspaces/{ws}/connections/{connectionId}': ['connection.discard'],
  'PUT /api/v1/workspaces/{ws}/connections/{connectionId}/webhooks/{subscriptionId}': ['webhook.configure'],
  'DELETE /api/v1/workspaces/{ws}/connections/{connectionId}/webhooks/{subscriptionId}': ['webhook.delete'],
  'POST /api/v1/workspaces/{ws}/notification-endpoints': ['notification_endpoint.create'],
  'PATCH /api/v1/workspaces/{ws}/notification-endpoints/{endpointId}': ['notification_endpoint.update'],
  'POST /api/v1/workspaces/{ws}/notification-endpoints/{endpointId}/rotate-secret': ['notification_endpoint.rotate_secret'],
  'DELETE /api/v1/workspaces/{ws}/notification-endpoints/{endpointId}': ['notification_endpoint.delete'],
};

/** Routes reached with POST/PUT/PATCH/DELETE that write no audit row of their own, with the reviewed reason. */
const EXCEPTIONS: { route: RegExp; reason: string }[] = [
  { route: /^POST \/api\/v1\/workspaces\/\{ws\}\/approvals\/\{approvalId\}\/votes$/, reason: 'a vote writes approval.approve or approval.deny by its decision (test/approvals/approvals.e2e-spec.ts)' },
  { route: /^POST \/api\/v1\/workspaces\/\{ws\}\/policy\/test$/, reason: 'a dry run: compiles and evaluates the draft, writes nothing' },
  { route: /^POST \/api\/v1\/workspaces\/\{ws\}\/policy\/(replay|explain)$/, reason: 'a dry run: evaluates recorded or given requests against a policy, writes nothing (test/policy/policy-replay.e2e-spec.ts)' },
  { route: /^POST \/api\/v1\/workspaces\/\{ws\}\/run-estimates$/, reason: 'a computation: estimates a run, writes nothing' },
  {
    route: /^(POST|PATCH) \/api\/v1\/workspaces\/\{ws\}\/(worker|workflow)/,
    reason: 'Workers keep their own immutable history (revisions, versions, runs with their events); the specification gives them no audit action (docs/decisions.md)',
  },
  {
    route: /^POST \/api\/v1\/workspaces\/\{ws\}\/(notification-endpoints\/\{endpointId\}\/(test|recover)|notification-messages\/\{messageId\}\/resend)$/,
    reason: 'deliveries of the notification outbox (a test ping, a redelivery): CONTRACT.md section 7 names no audit action for them; the attempt log records them',
  },
  { route: /^POST \/internal\/v1\//, reason: 'the gateway reports events (held calls, executions, webhook evidence): no operator acts' },
];

const exceptionOf = (route: string) => EXCEPTIONS.find((e) => e.route.test(route));

describe('every mutation is audited', () => {
  const mutations = routes()
    .filter((r) => r.method !== 'get')
    .map((r) => `${r.method.toUpperCase()} ${r.path}`);

  it('every state-changing route is reviewed: audited with actions of the vocabulary, or an exception with its reason', () => {
    expect(mutations.filter((route) => !AUDITED[route] && !exceptionOf(route))).toEqual([]);
    expect(mutations.filter((route) => AUDITED[route] && exceptionOf(route))).toEqual([]);
    expect(Object.keys(AUDITED).filter((route) => !mutations.includes(route))).toEqual([]);
    expect(EXCEPTIONS.filter((e) => !mutations.some((route) => e.route.test(route)))).toEqual([]);
    for (const actions of Object.values(AUDITED)) for (const action of actions) expect(AUDIT_ACTIONS).toContain(action);
  });

  describe('through HTTP', () => {
    let t: TestApp;
    let gw: GatewayEmulator;
    let owner: Operator;
    beforeAll(async () => {
      gw = await GatewayEmulator.start();
      t = await startTestApp({ GATEWAY_URL: gw.url });
      owner = await t.signIn();
    });
    afterAll(async () => {
      await t.close();
      await gw.stop();
    });

    const seqOf = async (ws: string) => Number((await t.db.query(`SELECT seq FROM audit_chain_heads WHERE workspace_id = $1`, [ws]))[0]?.seq ?? 0);
    /** Runs one request and answers the actions of the audit rows it added to `ws`'s chain, in order. */
    const written = async (route: string, ws: string, send: () => Promise<{ status: number }>, status = 200) => {
      const before = await seqOf(ws);
      const res = await send();
      expect([route, res.status]).toEqual([route, status]);
      const rows: { action: string }[] = await t.db.query(`SELECT action FROM audit_events WHERE workspace_id = $1 AND seq > $2 ORDER BY seq`, [ws, before]);
      return rows.map((r) => r.action);
    };
    const http = (method: 'post' | 'put' | 'delete', path: string, body?: object) => {
      const req = t.http()[method](path).set(bearer(owner));
      return body ? req.send(body) : req;
    };
    const base = () => `/api/v1/workspaces/${owner.workspaceId}`;
    const rule = { rule_id: 'refunds', effect: 'allow', actions: ['tool.call'], tools: ['stripe.*'], environments: ['prod'], approver_roles: ['owner'], approver_user_ids: [], quorum: 1 };

    it('writes exactly the reviewed audit rows for each route it can drive here', async () => {
      const seen: Record<string, string[]> = {};
      const ws = owner.workspaceId;
      const created = await t.http().post('/api/v1/workspaces').set(bearer(owner)).send({ org_id: owner.orgId, slug: 'audited' });
      expect(created.status).toBe(201);
      seen['POST /api/v1/workspaces'] = (await t.db.query(`SELECT action FROM audit_events WHERE workspace_id = $1 ORDER BY seq`, [created.body.id])).map((r: { action: string }) => r.action);

      let keyId = '';
      seen['POST /api/v1/workspaces/{ws}/keys'] = await written('mint', ws, async () => {
        const res = await http('post', `${base()}/keys`, { agent_id: 'audited' });
        keyId = res.body.key_id;
        return res;
      }, 201);
      seen['POST /api/v1/workspaces/{ws}/keys/{keyId}/rotate'] = await written('rotate', ws, () => http('post', `${base()}/keys/${keyId}/rotate`, { grace_seconds: 0 }));
      seen['POST /api/v1/workspaces/{ws}/keys/{keyId}/revoke'] = await written('revoke', ws, () => http('post', `${base()}/keys/${keyId}/revoke`));

      const member = await t.signIn();
      seen['PUT /api/v1/workspaces/{ws}/members/{userId}'] = await written('grant', ws, () => http('put', `${base()}/members/${member.userId}`, { role: 'viewer' }));
      seen['DELETE /api/v1/workspaces/{ws}/members/{userId}'] = await written('revoke member', ws, () => http('delete', `${base()}/members/${member.userId}`), 204);

      let draftHash = '';
      seen['PUT /api/v1/workspaces/{ws}/policy'] = await written('draft', ws, async () => {
        const res = await http('put', `${base()}/policy`, { cedar_text: 'permit(principal, action, resource);' });
        draftHash = res.body.draft_hash;
        return res;
      });
      seen['POST /api/v1/workspaces/{ws}/policy/publish'] = await written('publish', ws, () => http('post', `${base()}/policy/publish`, { expected_draft_hash: draftHash }));
      seen['PUT /api/v1/workspaces/{ws}/pricing'] = await written('pricing', ws, () => http('put', `${base()}/pricing`, { prices: [] }));
      seen['POST /api/v1/workspaces/{ws}/route-qualifiers'] = await written('qualifier', ws, () => http('post', `${base()}/route-qualifiers`, { qualifier_id: 'q' }));
      seen['DELETE /api/v1/workspaces/{ws}/route-qualifiers/{qualifierId}'] = await written('delete qualifier', ws, () => http('delete', `${base()}/route-qualifiers/q`));

      let policyId = '';
      seen['POST /api/v1/workspaces/{ws}/approval-policies'] = await written('approval policy', ws, async () => {
        const res = await http('post', `${base()}/approval-policies`, { name: 'p', rules: [rule] });
        policyId = res.body.policy_id;
        return res;
      });
      seen['PUT /api/v1/workspaces/{ws}/approval-policies/{policyId}'] = await written('revise', ws, () => http('put', `${base()}/approval-policies/${policyId}`, { name: 'p2', rules: [rule], expected_revision: 1 }));
      seen['POST /api/v1/workspaces/{ws}/approval-policies/{policyId}/disable'] = await written('disable', ws, () => http('post', `${base()}/approval-policies/${policyId}/disable`, { expected_revision: 2 }));

      let connectionId = '';
      seen['POST /api/v1/workspaces/{ws}/model-providers'] = await written('model provider', ws, async () => {
        const res = await http('post', `${base()}/model-providers`, { provider: 'provider_a', api_key: 'pk-model-secret-0123456789WXYZ', model_pattern: 'gpt-4o*', upstream_model: 'gpt-4o-2024-08-06' });
        connectionId = res.body.connection?.connection_id;
        return res;
      });
      seen['POST /api/v1/workspaces/{ws}/model-providers/{connectionId}/disable'] = await written('disable model', ws, () => http('post', `${base()}/model-providers/${connectionId}/disable`));

      seen['POST /api/v1/workspaces/{ws}/policy/test'] = await written('policy test', ws, () => http('post', `${base()}/policy/test`, {}));

      let endpointId = '';
      seen['POST /api/v1/workspaces/{ws}/notification-endpoints'] = await written('notification endpoint', ws, async () => {
        const res = await http('post', `${base()}/notification-endpoints`, { url: 'https://93.184.216.34/hook', event_types: ['*'] });
        endpointId = res.body.endpoint_id;
        return res;
      }, 201);
      seen['PATCH /api/v1/workspaces/{ws}/notification-endpoints/{endpointId}'] = await written('patch endpoint', ws, () =>
        t.http().patch(`${base()}/notification-endpoints/${endpointId}`).set(bearer(owner)).send({ description: 'd', expected_revision: 1 }),
      );
      seen['POST /api/v1/workspaces/{ws}/notification-endpoints/{endpointId}/rotate-secret'] = await written('rotate endpoint secret', ws, () =>
        http('post', `${base()}/notification-endpoints/${endpointId}/rotate-secret`, {}),
      );
      seen['DELETE /api/v1/workspaces/{ws}/notification-endpoints/{endpointId}'] = await written('delete endpoint', ws, () => http('delete', `${base()}/notification-endpoints/${endpointId}`), 204);

      const expected = Object.fromEntries(Object.keys(seen).map((route) => [route, AUDITED[route] ?? []]));
      expect(seen).toEqual(expected);
      expect(await t.app.get(AuditTrailService).check(ws)).toMatchObject({ ok: true });
    });
  });
});
