import { request as send } from 'node:http';
import { AddressInfo } from 'node:net';
import { bearer, Operator, startTestApp, TestApp } from 'test/support/app';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

/**
 * The refusals the router and body parsing make before any handler, which must answer alike on
 * Express and Fastify (CI runs this suite on both: HTTP_PLATFORM). Sent raw, so a path is not
 * re-encoded and a header says what the test says.
 */
describe(`framework refusals on ${process.env.HTTP_PLATFORM ?? 'express'}`, () => {
  let t: TestApp;
  let owner: Operator;
  let port: number;
  beforeAll(async () => {
    t = await startTestApp();
    await t.app.listen(0, '127.0.0.1');
    port = (t.app.getHttpServer().address() as AddressInfo).port;
    owner = await t.signIn();
  });
  afterAll(() => t.close());

  const call = (method: string, path: string, headers: Record<string, string> = {}, body?: string) =>
    new Promise<Answer>((resolve, reject) => {
      const req = send({ host: '127.0.0.1', port, method, path, headers, agent: false }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text && res.headers['content-type']?.startsWith('application/json') ? JSON.parse(text) : text }));
      });
      req.on('error', reject);
      req.end(body);
    });
  const create = (headers: Record<string, string>, body?: string) => call('POST', '/api/v1/workspaces', { ...bearer(owner), ...headers }, body);
  const json = { 'Content-Type': 'application/json' };
  const missing = { detail: [{ loc: ['body', 'org_id'], msg: 'field required', type: 'missing' }, { loc: ['body', 'slug'], msg: 'field required', type: 'missing' }] };
  const notObject = { detail: [{ loc: ['body'], msg: 'value must be a JSON object', type: 'model_type' }] };

  it('answers a body it cannot read 400 or 415 in the detail shape, with no-store', async () => {
    for (const body of ['{"org_id": ', '', '{"__proto__":{"x":1}}', '{"constructor":{"prototype":{"x":1}}}']) {
      const res = await create({ ...json, 'Content-Length': String(Buffer.byteLength(body)) }, body);
      expect([res.status, res.body, res.headers['cache-control']]).toEqual([400, { detail: 'malformed JSON body' }, 'no-store']);
    }
    const types: Record<string, string>[] = [{ 'Content-Type': 'application/xml' }, { 'Content-Type': 'application/vnd.api+json' }, { 'Content-Type': '/' }, {}];
    for (const headers of types) {
      const res = await create(headers, '{}');
      expect([res.status, res.body, res.headers['cache-control']]).toEqual([415, { detail: 'Unsupported Media Type' }, 'no-store']);
    }
  });

  it('reads JSON whatever its charset parameter, text as a string, and no body as an empty object', async () => {
    expect((await create({ 'Content-Type': 'Application/JSON; charset=latin1' }, '{}')).body).toEqual(missing);
    expect((await create({ 'Content-Type': 'text/plain' }, '{"org_id":"x"}')).body).toEqual(notObject);
    expect((await create(json, 'null')).body).toEqual(notObject);
    expect((await create({})).body).toEqual(missing);
  });

  it('refuses a declared length over the limit before reading the body', async () => {
    const res = await create({ ...json, 'Content-Length': String(2 * 1024 * 1024) }, '{}');
    expect([res.status, res.body]).toEqual([413, { detail: 'request body too large' }]);
  });

  it('answers a path with a malformed percent-escape 400, with no-store under /api/v1', async () => {
    const api = await call('GET', `/api/v1/workspaces/%ZZ/keys`, bearer(owner));
    expect([api.status, api.body, api.headers['cache-control']]).toEqual([400, { detail: 'malformed request' }, 'no-store']);
    const health = await call('GET', '/healthz%ZZ');
    expect([health.status, health.body, health.headers['cache-control']]).toEqual([400, { detail: 'malformed request' }, undefined]);
    // A malformed escape in the query string is the handler's business, not the router's.
    expect((await call('GET', '/healthz?a=%ZZ')).status).toBe(200);
  });

  it('routes exactly: no trailing slash, no other case, no other method', async () => {
    for (const [method, path] of [['GET', '/healthz/'], ['GET', '/HEALTHZ'], ['DELETE', '/healthz'], ['OPTIONS', '/healthz'], ['GET', '/api/v1/nope']]) {
      const res = await call(method, path);
      expect([method, path, res.status, res.body]).toEqual([method, path, 404, { detail: 'Not Found' }]);
    }
  });

  it('passes a path parameter of any length to the handler', async () => {
    for (const length of [100, 2049, 8000]) {
      const res = await call('GET', `/api/v1/workspaces/${'a'.repeat(length)}/keys`, bearer(owner));
      expect([res.status, res.body]).toEqual([404, { detail: 'workspace not found' }]);
    }
  });

  it('parses a query string flat: brackets are part of a name, a repeated name is a list', async () => {
    const window = `from=${new Date(Date.now() - 3600_000).toISOString()}&to=${new Date(Date.now() + 60_000).toISOString()}`;
    const audit = (query: string) => call('GET', `/api/v1/workspaces/${owner.workspaceId}/audit?${window}&${query}`, bearer(owner));
    const nested = await audit('action[a]=x');
    // `action[a]=x` is an unknown parameter (ignored), not an `action` object.
    expect([nested.status, (nested.body as { events: unknown[] }).events]).toEqual([200, [expect.objectContaining({ action: 'workspace.create' })]]);
    const repeated = await audit('limit=1&limit=2');
    expect([repeated.status, repeated.body]).toEqual([422, { detail: [{ loc: ['query', 'limit'], msg: 'limit must be an integer number', type: 'int_type' }] }]);
  });

  it('sends no X-Powered-By or ETag and answers a conditional GET in full', async () => {
    const res = await call('GET', '/healthz', { 'If-None-Match': '*' });
    expect([res.status, res.body]).toEqual([200, { ok: true }]);
    expect(res.headers['x-powered-by']).toBeUndefined();
    expect(res.headers.etag).toBeUndefined();
  });
});
