import { InternalServerErrorException } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AddressInfo } from 'node:net';
import { signServiceToken } from 'src/platform/auth/service-token';
import { MAX_JSON_DEPTH, TOO_DEEP, UNSTORABLE_TEXT } from 'src/common/http/text';
import { bearer, Operator, SERVICE_SECRET, startTestApp, TestApp } from 'test/support/app';
import { GatewayEmulator } from 'test/support/gateway-emulator';
import { loadDocument } from 'test/support/observed-responses';
import { rawRequest } from 'test/support/raw-http';

/**
 * Issue 17's reproduced examples, each answered at the edge in the specification's shapes: text
 * PostgreSQL or UTF-8 cannot take (NUL, a lone surrogate), integers past int32, a null where a
 * field may only be omitted, and an unexpected 5xx. The framework's own refusals (undecodable path,
 * bad JSON, wrong type, oversized body, unknown route or method) are in test/platform/http-platform.e2e-spec.ts;
 * test/platform/malformed-input.e2e-spec.ts keeps the rule true for every operation.
 */
describe(`input refused at the edge (${process.env.HTTP_PLATFORM ?? 'express'})`, () => {
  let gw: GatewayEmulator;
  let t: TestApp;
  let owner: Operator;
  let port: number;
  beforeAll(async () => {
    gw = await GatewayEmulator.start();
    t = await startTestApp({ GATEWAY_URL: gw.url });
    await t.app.listen(0, '127.0.0.1');
    port = (t.app.getHttpServer().address() as AddressInfo).port;
    owner = await t.signIn();
  });
  afterAll(async () => {
    await t.close();
    await gw.stop();
  });

  const ws = () => `/api/v1/workspaces/${owner.workspaceId}`;
  const get = (path: string) => rawRequest(port, 'GET', path, bearer(owner));
  const send = (method: string, path: string, body: unknown) => rawRequest(port, method, path, { ...bearer(owner), 'Content-Type': 'application/json' }, JSON.stringify(body));
  const unstorable = (...loc: (string | number)[]) => ({ detail: [{ loc, msg: UNSTORABLE_TEXT, type: 'string_unicode' }] });
  const count = async (table: string) => Number((await t.db.query(`SELECT count(*) AS n FROM ${table}`))[0].n);

  describe('a NUL in a path id is an id that cannot exist: 404 as the route answers an unknown one', () => {
    it.each([
      ['/api/v1/workspaces/%00', 'workspace not found'],
      ['/api/v1/workspaces/ws_x%00y/keys', 'workspace not found'],
      ['{ws}/approvals/x%00y', 'approval not found'],
      ['{ws}/approval-policies/%00', 'approval policy not found'],
      ['{ws}/receipts/rcpt%00/revisions', 'receipt not found'],
      ['{ws}/workers/%00/versions', 'worker not found'],
      ['{ws}/worker-runs/%00', 'run not found'],
      ['{ws}/catalog/%00', 'unknown catalog slug'],
    ])('GET %s', async (path, detail) => {
      const res = await get(path.replace('{ws}', ws()));
      expect([res.status, res.body]).toEqual([404, { detail }]);
    });

    it('on a mutation too, writing nothing', async () => {
      const res = await rawRequest(port, 'POST', `${ws()}/connections/%00/disable`, bearer(owner));
      expect([res.status, res.body]).toEqual([404, { detail: 'connection not found' }]);
      const revoke = await rawRequest(port, 'POST', `${ws()}/keys/k%00/revoke`, bearer(owner));
      expect([revoke.status, revoke.body]).toEqual([404, { detail: 'key not found' }]);
    });

    it('on every documented route, as that route answers a well-formed id it does not hold', async () => {
      const internal = async () => ({ Authorization: `Bearer ${await signServiceToken(SERVICE_SECRET, 'gateway', 'control')}` });
      const routes = Object.entries(loadDocument().paths).flatMap(([path, item]) =>
        Object.keys(item)
          .filter((method) => ['get', 'put', 'post', 'patch', 'delete'].includes(method) && /\{(?!ws\}|workspaceId\})\w+\}/.test(path))
          .map((method) => [method.toUpperCase(), path] as const),
      );
      let compared = 0;
      for (const [method, path] of routes) {
        const at = (id: string) => path.replace(/\{(\w+)\}/g, (_, name: string) => (name === 'ws' || name === 'workspaceId' ? owner.workspaceId : id));
        const ask = async (id: string) => rawRequest(port, method, at(id), path.startsWith('/internal/') ? await internal() : bearer(owner));
        const unknown = await ask('zzz');
        if (unknown.status !== 404) continue; // the route refuses first for another reason (a body, a format of its own)
        const nul = await ask('z%00z');
        expect([method, path, nul.status, nul.body]).toEqual([method, path, 404, unknown.body]);
        compared++;
      }
      expect(compared).toBeGreaterThan(25);
    });

    it('leaves a route that checks the format of its id itself to refuse it its own way', async () => {
      const key = await rawRequest(port, 'GET', `/internal/v1/keys/${'a'.repeat(63)}%00`, { Authorization: `Bearer ${await signServiceToken(SERVICE_SECRET, 'gateway', 'control')}` });
      expect([key.status, key.body]).toEqual([400, { detail: 'key hash must be sha256 hex' }]);
      const subscription = await rawRequest(port, 'PUT', `${ws()}/connections/conn_x/webhooks/wsub_a%00`, { ...bearer(owner), 'Content-Type': 'application/json' }, '{}');
      expect([subscription.status, subscription.body]).toEqual([
        422,
        { detail: [{ loc: ['path', 'subscription_id'], msg: 'must be wsub_ followed by 1-64 letters, digits, _ or -', type: 'string_pattern_mismatch' }] },
      ]);
    });

    it('on the internal snapshot route', async () => {
      const res = await rawRequest(port, 'GET', '/internal/v1/workspaces/%00/snapshot', { Authorization: `Bearer ${await signServiceToken(SERVICE_SECRET, 'gateway', 'control')}` });
      expect([res.status, res.body]).toEqual([404, { detail: 'workspace not found' }]);
    });

    it('after membership: a non-member still gets the workspace 404, a viewer the role 403', async () => {
      const stranger = await t.signIn();
      const res = await rawRequest(port, 'POST', `${ws()}/keys/k%00/revoke`, bearer(stranger));
      expect([res.status, res.body]).toEqual([404, { detail: 'workspace not found' }]);
      const viewer = await t.member(owner, 'viewer');
      const denied = await rawRequest(port, 'POST', `${ws()}/keys/k%00/revoke`, bearer(viewer));
      expect([denied.status, denied.body]).toEqual([403, { detail: 'action not permitted' }]);
    });
  });

  describe('a NUL in a query value is a 422 naming the parameter', () => {
    it.each([
      ['/api/v1/workspaces?org_id=%00', 'org_id'],
      ['{ws}/audit?user_id=a%00b', 'user_id'],
      ['{ws}/audit?target=%00', 'target'],
      ['{ws}/receipts?tool=t%00', 'tool'],
      ['{ws}/receipts?key_id=%00', 'key_id'],
      ['{ws}/receipts?connection_id=%00', 'connection_id'],
      ['{ws}/worker-runs?worker_id=%00', 'worker_id'],
    ])('GET %s', async (path, name) => {
      const res = await get(path.replace('{ws}', ws()));
      expect([res.status, res.body]).toEqual([422, unstorable('query', name)]);
    });

    it('the OAuth callback, which reads its query raw, keeps its one refusal', async () => {
      const res = await rawRequest(port, 'GET', '/oauth/callback?state=s%00&code=c%00');
      expect([res.status, res.body]).toEqual([400, { detail: 'invalid or expired oauth state' }]);
    });

    it('a parameter the route does not read stays ignored', async () => {
      const res = await get(`${ws()}/keys?unknown=%00`);
      expect([res.status, res.body]).toEqual([200, { keys: [] }]);
    });
  });

  describe('a NUL or a lone surrogate in a JSON body is a 422 naming the field, and nothing is written', () => {
    it('key agent_id and attributes (values and keys)', async () => {
      const before = await count('virtual_keys');
      for (const [body, loc] of [
        [{ agent_id: 'a\u0000b' }, ['body', 'agent_id']],
        [{ agent_id: 'a', attributes: { team: 'x\u0000' } }, ['body', 'attributes', 'team']],
        [{ agent_id: 'a', attributes: { 'k\u0000': 'x' } }, ['body', 'attributes', 'k\u0000']],
        [{ agent_id: 'a', attributes: { team: '\ud800x' } }, ['body', 'attributes', 'team']],
      ] as const) {
        const res = await send('POST', `${ws()}/keys`, body);
        expect([res.status, res.body]).toEqual([422, unstorable(...loc)]);
      }
      expect(await count('virtual_keys')).toBe(before);
    });

    it('workspace org_id and slug', async () => {
      for (const [body, field] of [
        [{ org_id: `${owner.orgId}\u0000`, slug: 's' }, 'org_id'],
        [{ org_id: owner.orgId, slug: 's\u0000' }, 'slug'],
      ] as const) {
        const res = await send('POST', '/api/v1/workspaces', body);
        expect([res.status, res.body]).toEqual([422, unstorable('body', field)]);
      }
    });

    it('policy cedar_text and an approval-policy name', async () => {
      const policy = await send('PUT', `${ws()}/policy`, { cedar_text: 'permit(principal, action, resource);\u0000' });
      expect([policy.status, policy.body]).toEqual([422, unstorable('body', 'cedar_text')]);
      const approval = await send('POST', `${ws()}/approval-policies`, { name: 'n\u0000', rules: [] });
      expect([approval.status, approval.body]).toEqual([422, unstorable('body', 'name')]);
    });

    it('model-provider api_key, model_pattern and upstream_model with a lone surrogate (URIError in encodeURI before)', async () => {
      const valid = { provider: 'provider_a', api_key: 'sk-test-0123456789', model_pattern: 'gpt-x', upstream_model: 'gpt-x' };
      for (const field of ['api_key', 'model_pattern', 'upstream_model'] as const) {
        const res = await send('POST', `${ws()}/model-providers`, { ...valid, [field]: '\ud800x' });
        expect([field, res.status, res.body]).toEqual([field, 422, unstorable('body', field)]);
      }
      expect(gw.callsTo('/internal/v1/credentials/seal')).toEqual([]);
    });

    it('an array where a nested object is declared (class-validator validated it element by element, a 500 before)', async () => {
      const price = { model: 'm', input_micros_usd_per_mtok: 1, output_micros_usd_per_mtok: 1, cached_micros_usd_per_mtok: 1, reasoning_micros_usd_per_mtok: 1 };
      for (const prices of [[[]], [[price]]]) {
        const res = await send('PUT', `${ws()}/pricing`, { prices });
        expect([res.status, res.body]).toEqual([422, { detail: [{ loc: ['body', 'prices', 0], msg: 'prices must be an object', type: 'model_type' }] }]);
      }
    });

    it('a pricing model name with a lone surrogate, deep in a list', async () => {
      const price = { model: 'm\udfff', input_micros_usd_per_mtok: 1, output_micros_usd_per_mtok: 1, cached_micros_usd_per_mtok: 1, reasoning_micros_usd_per_mtok: 1 };
      const res = await send('PUT', `${ws()}/pricing`, { prices: [price] });
      expect([res.status, res.body]).toEqual([422, unstorable('body', 'prices', 0, 'model')]);
    });
  });

  describe('a body nested past MAX_JSON_DEPTH is a 422 before any recursive walk (a stack overflow 500 before)', () => {
    const nest = (levels: number): unknown => (levels === 0 ? 'leaf' : { a: nest(levels - 1) });

    it('refused at the first container too deep, on every route reading a body, writing nothing', async () => {
      const before = await count('virtual_keys');
      for (const levels of [MAX_JSON_DEPTH, 100_000]) {
        const res = await rawRequest(port, 'POST', `${ws()}/keys`, { ...bearer(owner), 'Content-Type': 'application/json' }, `{"agent_id":"a","attributes":${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}}`);
        expect([res.status, res.body]).toEqual([422, { detail: [{ loc: ['body', 'attributes', ...Array(MAX_JSON_DEPTH - 1).fill('a')], msg: TOO_DEEP, type: 'value_error' }] }]);
      }
      const array = await rawRequest(port, 'POST', '/api/v1/workspaces', { ...bearer(owner), 'Content-Type': 'application/json' }, `${'['.repeat(400_000)}${']'.repeat(400_000)}`);
      expect([array.status, array.body]).toEqual([422, { detail: [{ loc: ['body', ...Array(MAX_JSON_DEPTH).fill(0)], msg: TOO_DEEP, type: 'value_error' }] }]);
      expect(await count('virtual_keys')).toBe(before);
    });

    it('one level less is taken', async () => {
      const res = await send('POST', `${ws()}/keys`, { agent_id: 'a', attributes: nest(MAX_JSON_DEPTH - 1) });
      expect(res.status).toBe(201);
    });
  });

  describe('every integer is range checked before SQL', () => {
    it('revision and before_revision past int32 are 422 in the validation shape', async () => {
      const revision = await get(`${ws()}/receipts/rcpt_1?revision=2147483648`);
      expect([revision.status, revision.body]).toEqual([422, { detail: [{ loc: ['query', 'revision'], msg: 'revision must not be greater than 2147483647', type: 'less_than_equal' }] }]);
      const before = await get(`${ws()}/receipts/rcpt_1/revisions?before_revision=2147483648`);
      expect([before.status, before.body]).toEqual([422, { detail: [{ loc: ['query', 'before_revision'], msg: 'before_revision must not be greater than 2147483647', type: 'less_than_equal' }] }]);
      // The largest int32 is still a well-formed question (no such receipt).
      expect((await get(`${ws()}/receipts/rcpt_1?revision=2147483647`)).status).toBe(404);
    });

    it('in bodies too: expected_revision past int32 on a qualifier', async () => {
      const qualifier = await send('POST', `${ws()}/route-qualifiers`, { qualifier_id: 'q1', expected_revision: 2147483648 });
      expect(qualifier.status).toBe(422);
      expect(qualifier.body).toEqual({ detail: expect.arrayContaining([{ loc: ['body', 'expected_revision'], msg: 'expected_revision must not be greater than 2147483647', type: 'less_than_equal' }]) });
    });
  });

  describe('a null where a field may be omitted but is never null is a 422 naming it, not taken for a value', () => {
    const typeError = (field: string, msg: string, type: string) => ({ detail: [{ loc: ['body', field], msg, type }] });
    it('base_url on POST model-providers (a TypeError 500 before)', async () => {
      const res = await send('POST', `${ws()}/model-providers`, { provider: 'compat_custom', api_key: 'sk-test-0123456789', model_pattern: 'm', upstream_model: 'm', base_url: null });
      expect([res.status, res.body]).toEqual([422, typeError('base_url', 'base_url must be a string', 'string_type')]);
      expect(await count('connections')).toBe(0);
    });
    it('client_secret on a connection start and api_key on a reconnect (a reconnect answered 500 on a CI run), writing nothing', async () => {
      const start = await send('POST', `${ws()}/connections`, { slug: 'stripe', source: 'native', client_secret: null });
      expect([start.status, start.body]).toEqual([422, typeError('client_secret', 'client_secret must be a string', 'string_type')]);
      expect(await count('connections')).toBe(0);
      const created = await send('POST', `${ws()}/connections`, { slug: 'stripe', source: 'native' });
      expect(created.status).toBe(200);
      const id = (created.body as { connection: { connection_id: string } }).connection.connection_id;
      const before = await t.db.query(`SELECT credential_revision, updated_at FROM connections WHERE id = $1`, [id]);
      const audited = await count('audit_events');
      for (const field of ['api_key', 'client_secret']) {
        const res = await send('POST', `${ws()}/connections/${id}/reconnect`, { [field]: null });
        expect([res.status, res.body]).toEqual([422, typeError(field, `${field} must be a string`, 'string_type')]);
      }
      expect(await t.db.query(`SELECT credential_revision, updated_at FROM connections WHERE id = $1`, [id])).toEqual(before);
      expect(await count('audit_events')).toBe(audited);
    });
    it('receipt_id and the request fields of a policy explain (a null receipt_id was looked up as a receipt)', async () => {
      const request = { principal: { type: 'Agent', id: 'a' }, action: { type: 'Action', id: 'tool.call' }, resource: { type: 'Tool', id: 't' }, context: {} };
      const res = await send('POST', `${ws()}/policy/explain`, { against: 'published', receipt_id: null, ...request });
      expect([res.status, res.body]).toEqual([422, typeError('receipt_id', 'receipt_id must be a string', 'string_type')]);
      const principal = await send('POST', `${ws()}/policy/explain`, { against: 'published', ...request, principal: null });
      expect(principal.status).toBe(422);
      expect((principal.body as { detail: { loc: string[] }[] }).detail[0].loc).toEqual(['body', 'principal']);
    });
    it('the Workers routes: a run with a null session profile was given any active one of the workspace (TypeORM drops a null from a where)', async () => {
      expect((await send('POST', `${ws()}/keys`, { agent_id: 'agent-1' })).status).toBe(201);
      const worker = await send('POST', `${ws()}/workers`, { slug: 'null-w', display_name: 'W', agent_passport_id: 'agent-1' });
      expect(worker.status).toBe(201);
      const workerId = (worker.body as { resource_id: string }).resource_id;
      expect((await send('POST', `${ws()}/worker-session-profiles`, { name: 'crm', environment_class: 'code' })).status).toBe(201);
      const runs = await count('worker_runs');
      const run = await send('POST', `${ws()}/worker-runs`, { worker_id: workerId, session_profile_id: null });
      expect([run.status, run.body]).toEqual([422, typeError('session_profile_id', 'session_profile_id must be a string', 'string_type')]);
      expect(await count('worker_runs')).toBe(runs);
      for (const field of ['worker_id', 'template_id']) {
        const estimate = await send('POST', `${ws()}/run-estimates`, { [field]: null });
        expect([estimate.status, estimate.body]).toEqual([422, typeError(field, `${field} must be a string`, 'string_type')]);
      }
      const draft = await send('POST', `${ws()}/worker-drafts`, { job_description: 'triage', template_id: null });
      expect([draft.status, draft.body]).toEqual([422, typeError('template_id', 'template_id must be a string', 'string_type')]);
      const workflow = await send('POST', `${ws()}/workflows`, { slug: 'null-f', display_name: 'F' });
      const workflowId = (workflow.body as { resource_id: string }).resource_id;
      const steps = await send('PATCH', `${ws()}/workflows/${workflowId}`, { steps: [{ step_id: 's1', worker_id: workerId, condition: null }] });
      expect(steps.status).toBe(422);
      expect((steps.body as { detail: { loc: unknown[] }[] }).detail[0].loc).toEqual(['body', 'steps', 0, 'condition']);
    });
  });

  describe('an unexpected 5xx', () => {
    const lines: string[] = [];
    let write: typeof process.stdout.write;
    beforeEach(() => {
      lines.length = 0;
      write = process.stdout.write.bind(process.stdout);
      process.stdout.write = ((chunk: string | Uint8Array) => {
        lines.push(String(chunk));
        return true;
      }) as typeof process.stdout.write;
    });
    afterEach(() => {
      process.stdout.write = write;
      jest.restoreAllMocks();
    });

    it('a thrown 500 HttpException (a route whose access declaration is missing) is logged and answered internal_error', async () => {
      // The access guard's lookup finds no declaration, as for a handler without @Action: a 500 HttpException.
      jest.spyOn(Reflector.prototype, 'getAllAndOverride').mockReturnValueOnce(undefined);
      const res = await get(`${ws()}/keys`);
      expect([res.status, res.body]).toEqual([500, { error: { code: 'internal_error', message: 'internal server error' } }]);
      const logged = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(logged).toContainEqual(
        expect.objectContaining({ level: 'error', msg: 'unhandled error', error: InternalServerErrorException.name, status: 500, stack: expect.stringMatching(/^\s*at .*declaredAccess/) }),
      );
    });
  });
});
