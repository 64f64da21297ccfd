import { AddressInfo } from 'node:net';
import { Server } from 'node:http';
import { ControlClient, ControlError, createControlClient, paginate, Schemas } from 'clients/typescript/src/index';
import { startTestApp, TestApp } from 'test/support/app';

const TOOL_CALL = 'Gateway::Action::"tool.call"';
const VALID = `permit (principal is Gateway::Key, action == ${TOOL_CALL}, resource) when { context.env == "dev" };\n`;
const WINDOW = { from: '2020-01-01T00:00:00Z', to: '2100-01-01T00:00:00Z' };

/** What a rejected call threw, which must be a ControlError. */
async function failure(call: Promise<unknown>): Promise<ControlError> {
  const caught: unknown = await call.then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(caught).toBeInstanceOf(ControlError);
  return caught as ControlError;
}

// An operator's session driven only through the published client (clients/typescript) over real HTTP.
describe('typed client (clients/typescript) against the real server', () => {
  let t: TestApp;
  let baseUrl: string;
  beforeAll(async () => {
    t = await startTestApp();
    await t.app.listen(0, '127.0.0.1');
    baseUrl = `http://127.0.0.1:${((t.app.getHttpServer() as Server).address() as AddressInfo).port}`;
  });
  afterAll(() => t.close());

  /** A client for the user `sub`, asking the identity issuer for a fresh session token before each request. */
  const clientFor = (sub: string): ControlClient => createControlClient({ baseUrl, getToken: () => t.issuer.token({ sub, email: `${sub}@example.com` }) });

  it('provisions, mints and revokes a key, publishes a policy, creates an approval policy and pages the audit trail', async () => {
    const client = clientFor('client-operator');

    const me = await client.GET('/api/v1/me');
    const ws = me.default_workspace_id;
    expect(me.user.email).toBe('client-operator@example.com');
    expect(me.workspaces).toEqual([expect.objectContaining({ id: ws, role: 'owner', frozen: false })]);
    const path = { ws };

    const minted = await client.POST('/api/v1/workspaces/{ws}/keys', { params: { path }, body: { agent_id: 'ci-publisher' } });
    expect(minted).toMatchObject({ agent_id: 'ci-publisher', status: 'active', revoked_at: null });
    expect(minted.plaintext.endsWith(minted.last4)).toBe(true);
    // @ts-expect-error the listed shape carries no plaintext: the types come from the document, not `any`
    expect((await client.GET('/api/v1/workspaces/{ws}/keys/{keyId}', { params: { path: { ws, keyId: minted.key_id } } })).plaintext).toBeUndefined();
    const revoked = await client.POST('/api/v1/workspaces/{ws}/keys/{keyId}/revoke', { params: { path: { ws, keyId: minted.key_id } } });
    expect(revoked).toMatchObject({ key_id: minted.key_id, status: 'revoked', revoked_at: expect.any(String) });
    const listed = await client.GET('/api/v1/workspaces/{ws}/keys', { params: { path } });
    expect(listed.keys.map((key) => [key.key_id, key.status])).toEqual([[minted.key_id, 'revoked']]);

    const before = await client.GET('/api/v1/workspaces/{ws}/policy', { params: { path } });
    const stored = await client.PUT('/api/v1/workspaces/{ws}/policy', { params: { path }, body: { cedar_text: VALID } });
    expect(stored.cedar_text).toBe(VALID);
    expect(stored.draft_hash).not.toBe(before.draft_hash);
    const tested = await client.POST('/api/v1/workspaces/{ws}/policy/test', { params: { path } });
    expect(tested).toMatchObject({ validation_state: 'valid', diagnostics: [] });
    // expected_draft_hash is the API's If-Match: a stale one is refused.
    const stale = await failure(client.POST('/api/v1/workspaces/{ws}/policy/publish', { params: { path }, body: { expected_draft_hash: before.draft_hash } }));
    expect([stale.status, stale.body, stale.detail]).toEqual([409, { detail: 'policy draft changed' }, 'policy draft changed']);
    const published = await client.POST('/api/v1/workspaces/{ws}/policy/publish', { params: { path }, body: { expected_draft_hash: stored.draft_hash } });
    expect(published).toMatchObject({ draft_hash: stored.draft_hash, publication: { state: 'published' } });

    const rules: Schemas['ApprovalPolicy']['rules'] = [
      { rule_id: 'refunds', effect: 'allow', actions: ['tool.call'], tools: ['stripe.*'], environments: ['prod'], approver_roles: ['owner'], approver_user_ids: [], quorum: 1 },
    ];
    // The request DTO declares `rules: unknown` (validated by hand), so the document calls it an object: the response's type is the honest one.
    const approvalPolicy = await client.POST('/api/v1/workspaces/{ws}/approval-policies', { params: { path }, body: { name: 'Refunds', rules: rules as unknown as Record<string, unknown> } });
    expect(approvalPolicy).toMatchObject({ name: 'Refunds', revision: 1 });

    const pages = [];
    for await (const page of paginate(client, '/api/v1/workspaces/{ws}/audit', { params: { path, query: { ...WINDOW, limit: 2 } } })) pages.push(page);
    const events = [];
    for await (const event of paginate(client, '/api/v1/workspaces/{ws}/audit', { params: { path, query: { ...WINDOW, limit: 2 } } }, (page) => page.events)) events.push(event);
    const whole = await client.GET('/api/v1/workspaces/{ws}/audit', { params: { path, query: { ...WINDOW, limit: 200 } } });
    expect(pages.length).toBe(Math.ceil(whole.events.length / 2));
    expect(pages.flatMap((page) => page.events)).toEqual(whole.events);
    expect(events).toEqual(whole.events);
    expect(new Set(events.map((event) => event.action))).toEqual(
      new Set(['workspace.create', 'key.mint', 'key.revoke', 'policy.draft.store', 'policy.publish', 'approval_policy.create']),
    );
  });

  it('answers every refusal as a typed ControlError: 404 for another workspace, 422 with the failing fields', async () => {
    const owner = clientFor('client-owner');
    const ws = (await owner.GET('/api/v1/me')).default_workspace_id;
    const stranger = clientFor('client-stranger');
    await stranger.GET('/api/v1/me');

    const notFound = await failure(stranger.GET('/api/v1/workspaces/{ws}/keys', { params: { path: { ws } } }));
    expect([notFound.status, notFound.body, notFound.message]).toEqual([404, { detail: 'workspace not found' }, '404 workspace not found']);

    const missingKey = await failure(owner.GET('/api/v1/workspaces/{ws}/keys/{keyId}', { params: { path: { ws, keyId: 'key_000000000000000000000000' } } }));
    expect([missingKey.status, missingKey.detail]).toEqual([404, 'key not found']);

    const invalid = await failure(owner.PUT('/api/v1/workspaces/{ws}/policy', { params: { path: { ws } }, body: { cedar_text: 'x'.repeat(262145) } }));
    expect(invalid.status).toBe(422);
    expect(invalid.issues).toEqual([{ loc: ['body', 'cedar_text'], msg: 'cedar_text must be at most 262144 bytes', type: 'string_too_long' }]);
    expect(invalid.detail).toBeUndefined();
  });
});
