import { Validator } from '@cfworker/json-schema';
import { signServiceToken } from 'src/platform/auth/service-token';
import { routes } from 'src/openapi/openapi';
import { bearer, Operator, SERVICE_SECRET, startTestApp, TestApp } from 'test/support/app';
import { checkObservations, createObservationsDir, Document, loadDocument, ResponseRecorder } from 'test/support/observed-responses';

type Operation = { method: string; path: string; op: Document['paths'][string][string] };

const CHECKED_IN = loadDocument();
const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

function operations(doc: Document): Operation[] {
  return Object.entries(doc.paths).flatMap(([path, item]) => METHODS.filter((m) => item[m]).map((method) => ({ method, path, op: item[method] })));
}

describe('OpenAPI document (/api/docs)', () => {
  let t: TestApp;
  let owner: Operator;
  let stranger: Operator;
  let served: Document;

  beforeAll(async () => {
    t = await startTestApp();
    owner = await t.signIn();
    stranger = await t.signIn();
    served = (await t.http().get('/api/docs/openapi.json').expect(200).expect('Content-Type', /json/)).body;
  });
  afterAll(() => t.close());

  it('serves the checked-in docs/openapi.json, without a session (regenerate with `npm run openapi`)', () => {
    expect(served).toEqual(CHECKED_IN);
  });

  it('serves Swagger UI without a session', async () => {
    const res = await t.http().get('/api/docs').redirects(1).expect(200);
    expect(res.text).toContain('swagger-ui');
  });

  it('is OpenAPI 3.1 and documents exactly the routes the application serves', () => {
    expect(served).toMatchObject({ openapi: '3.1.0', info: { title: 'Agent gateway control plane' } });
    const documented = operations(served).map((o) => `${o.method} ${o.path}`).sort();
    expect(documented).toEqual(routes().map((r) => `${r.method} ${r.path}`).sort());
  });

  it('every schema in the document is valid JSON Schema 2020-12', () => {
    for (const [name, schema] of Object.entries(served.components.schemas)) {
      expect(() => new Validator({ ...schema, $defs: served.components.schemas } as object, '2020-12').validate({})).not.toThrow();
      expect(name).toMatch(/^\w+$/);
    }
  });

  describe('every operation answers the generic probes (each response checked against the document)', () => {
    /** Sends one request and returns its status (test/support/observed-responses.ts checks the status and body against the document). */
    const probe = async (o: Operation, path: string, headers: Record<string, string>, body?: object): Promise<number> => {
      let req = t.http()[o.method as 'get'](path).set(headers).redirects(0);
      if (body) req = req.send(body);
      return (await req).status;
    };
    const fill = (o: Operation, ws: string) => o.path.replace('{ws}', ws).replace(/\{(\w+)\}/g, (_, name) => `${name}_0000`);

    it('without credentials', async () => {
      const seen = new Map<string, number>();
      for (const o of operations(served)) seen.set(`${o.method} ${o.path}`, await probe(o, fill(o, owner.workspaceId), {}));
      for (const r of routes()) {
        const status = seen.get(`${r.method} ${r.path}`);
        if (r.access.kind !== 'public') expect([r.method, r.path, status]).toEqual([r.method, r.path, 401]);
      }
    });

    it("as a non-member of the workspace (the same 404 as a workspace that does not exist)", async () => {
      for (const r of routes().filter((r) => r.access.kind === 'workspace')) {
        const o = operations(served).find((x) => x.method === r.method && x.path === r.path)!;
        expect([r.path, await probe(o, fill(o, owner.workspaceId), bearer(stranger), r.body ? {} : undefined)]).toEqual([r.path, 404]);
      }
    });

    it('with an unknown body field, as the owner (or the gateway)', async () => {
      const service = { Authorization: `Bearer ${await signServiceToken(SERVICE_SECRET, 'gateway', 'control')}` };
      for (const r of routes().filter((r) => r.body)) {
        const o = operations(served).find((x) => x.method === r.method && x.path === r.path)!;
        await probe(o, fill(o, owner.workspaceId), r.access.kind === 'internal' ? service : bearer(owner), { unexpected_field_x: 1 });
      }
    });

    it('reads of the workspace, as the owner, with no parameters', async () => {
      // The event stream never ends by itself; test/notifications/notifications-stream.e2e-spec.ts reads it.
      const reads = routes().filter((r) => r.method === 'get' && r.access.kind === 'workspace' && !/\{(?!ws\})/.test(r.path) && !r.path.endsWith('/events'));
      expect(reads.length).toBeGreaterThan(10);
      for (const r of reads) {
        const o = operations(served).find((x) => x.method === r.method && x.path === r.path)!;
        await probe(o, fill(o, owner.workspaceId), bearer(owner));
      }
    });
  });
});

describe('the response check every e2e suite runs through (test/support/observed-responses.ts)', () => {
  const detail = { 'application/json': { schema: { $ref: '#/components/schemas/Detail' } } };
  const doc: Document = {
    paths: {
      '/things/{id}': {
        get: {
          responses: {
            200: { description: 'Success', content: { 'application/json': { schema: { $ref: '#/components/schemas/Thing' } } } },
            404: { $ref: '#/components/responses/NotFound' },
            500: { $ref: '#/components/responses/Internal' },
          },
        },
        delete: { responses: { 204: { description: 'No content' } } },
      },
      '/blobs': { get: { responses: { 200: { description: 'Success', content: { 'application/json': { schema: {} } } } } } },
    },
    components: {
      schemas: {
        Thing: { type: 'object', required: ['id'], properties: { id: { type: 'string' } }, additionalProperties: false },
        Detail: { type: 'object', required: ['detail'], properties: { detail: { type: 'string' } } },
      },
      responses: { NotFound: { description: 'Not found', content: detail }, Internal: { description: 'Internal', content: detail } },
    },
  };
  type Seen = [method: string, template: string, status: number, contentType: string | undefined, payload: string];
  const JSON_TYPE = 'application/json; charset=utf-8';
  const check = (complete: boolean, ...responses: Seen[]) => {
    const dir = createObservationsDir();
    const recorder = new ResponseRecorder(doc);
    for (const seen of responses) recorder.record(...seen);
    recorder.flush(dir);
    return checkObservations(doc, dir, complete);
  };
  const ok: Seen = ['GET', '/things/:id', 200, JSON_TYPE, '{"id":"t1"}'];
  const missing: Seen = ['GET', '/things/:id', 404, JSON_TYPE, '{"detail":"thing not found"}'];
  const gone: Seen = ['DELETE', '/things/:id', 204, undefined, ''];
  const blob: Seen = ['GET', '/blobs', 200, JSON_TYPE, '{"any":1}'];

  it('passes documented statuses with conforming bodies (a shared 500 need not be observed)', () => {
    expect(check(false, ok, missing, gone)).toEqual([]);
  });

  it('fails a status the document does not list', () => {
    expect(check(false, ok, ['GET', '/things/:id', 409, JSON_TYPE, '{"detail":"stale"}'])).toEqual(['get /things/{id} 409: status 409 is not documented']);
  });

  it('fails a body that does not conform, even after conforming ones', () => {
    const failures = check(false, ok, ['GET', '/things/:id', 200, JSON_TYPE, '{"id":"t1","secret":"x"}']);
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatch(/^get \/things\/\{id\} 200: body does not conform: .*\{"id":"t1","secret":"x"\}/);
  });

  it('fails a success body the document gives no schema, and a body where it documents none', () => {
    expect(check(false, blob, ['DELETE', '/things/:id', 204, JSON_TYPE, '{}'])).toEqual([
      'get /blobs 200: the document gives this body no schema (add @Returns to the handler)',
      'delete /things/{id} 204: a JSON body where the document has none',
    ]);
  });

  it('fails documented statuses no suite observed, when every suite ran', () => {
    expect(check(true, ok, gone)).toEqual([
      'get /things/{id} 404: documented, never observed by an e2e suite',
      'get /blobs 200: documented, never observed by an e2e suite',
    ]);
    expect(check(false, ok, gone)).toEqual([]);
  });
});
