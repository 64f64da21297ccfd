import { AddressInfo, connect } from 'node:net';
import { bearer, Operator, startTestApp, TestApp } from 'test/support/app';
import { rawRequest } from 'test/support/raw-http';

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

  const call = (method: string, path: string, headers: Record<string, string> = {}, body?: string) => rawRequest(port, method, path, headers, body);
  /** Bytes written to a socket as they are (what node's HTTP parser refuses), and everything read back until the server closes. */
  const wire = (text: string) =>
    new Promise<string>((resolve, reject) => {
      let answer = '';
      const socket = connect(port, '127.0.0.1', () => socket.write(text));
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => (answer += chunk));
      socket.on('close', () => resolve(answer));
      socket.on('error', reject);
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

  it('refuses a body over the limit sent without a length (chunked) once it passes the limit', async () => {
    const res = await create({ ...json, 'Transfer-Encoding': 'chunked' }, `{"org_id":"${'x'.repeat(1024 * 1024)}"}`);
    expect([res.status, res.body, res.headers['cache-control']]).toEqual([413, { detail: 'request body too large' }, 'no-store']);
  });

  it("answers what node's HTTP parser refuses in the detail shape and closes the connection", async () => {
    const refusal = (status: string, detail: string) => {
      const body = JSON.stringify({ detail });
      return `HTTP/1.1 ${status}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`;
    };
    for (const request of [
      'GET /healthz HTTP/1.1\r\nHost: x\r\nNot a header\r\n\r\n',
      'GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n',
      'BREW /healthz HTTP/1.1\r\nHost: x\r\n\r\n',
      'POST /api/v1/workspaces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
    ]) {
      expect([request, await wire(request)]).toEqual([request, refusal('400 Bad Request', 'malformed request')]);
    }
    const oversized = `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Filler: ${'a'.repeat(20000)}\r\n\r\n`;
    expect(await wire(oversized)).toBe(refusal('431 Request Header Fields Too Large', 'Request Header Fields Too Large'));
  });

  it('answers a path with a malformed percent-escape 400, with no-store under /api/v1', async () => {
    for (const segment of ['%ZZ', '%FF%FE', '%ED%A0%80', '%']) {
      const api = await call('GET', `/api/v1/workspaces/${segment}/keys`, bearer(owner));
      expect([segment, api.status, api.body, api.headers['cache-control']]).toEqual([segment, 400, { detail: 'malformed request' }, 'no-store']);
    }
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
