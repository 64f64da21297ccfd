import { AddressInfo } from 'node:net';
import { Server } from 'node:http';
import { rawRequest, RawAnswer } from 'test/support/raw-http';
import { bearer, Operator, startTestApp, TestApp } from 'test/support/app';
import { mintPassport } from 'test/support/workers';
import { freezeWorkspace } from 'test/support/factories';

// CORS on the operator API (issue 33): the dashboard's origin (WEB_URL's, by default) may call it
// from a browser; no other origin may, and nothing outside the operator API answers CORS at all.
const DASHBOARD = 'http://localhost:5173';
const STRANGER = 'http://evil.example:5173';
const EXPOSED = 'etag, x-request-id, retry-after';

const corsHeaders = (answer: { headers: Record<string, unknown> }) =>
  Object.fromEntries(Object.entries(answer.headers).filter(([name]) => name.startsWith('access-control-')));

/** What every answer to the dashboard's origin carries, whatever its status. */
function expectCrossOrigin(answer: { headers: Record<string, unknown> }, origin = DASHBOARD): void {
  expect(corsHeaders(answer)).toEqual({ 'access-control-allow-origin': origin, 'access-control-expose-headers': EXPOSED });
  expect(answer.headers.vary).toBe('Origin');
}

describe('CORS for the dashboard origin (default: the origin of WEB_URL)', () => {
  let t: TestApp;
  let port: number;
  let owner: Operator;
  const send = (method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<RawAnswer> => rawRequest(port, method, path, headers, body);
  const preflight = (path: string, origin: string, method = 'GET', requested = 'authorization') =>
    send('OPTIONS', path, { Origin: origin, 'Access-Control-Request-Method': method, 'Access-Control-Request-Headers': requested });

  beforeAll(async () => {
    t = await startTestApp();
    await t.app.listen(0, '127.0.0.1');
    port = ((t.app.getHttpServer() as Server).address() as AddressInfo).port;
    owner = await t.signIn();
  });
  afterAll(() => t.close());

  describe('preflight', () => {
    it('answers 204 to the allowed origin with the origin echoed, the methods, the headers, a max age and Vary', async () => {
      const answer = await preflight('/api/v1/me', DASHBOARD, 'GET', 'authorization');
      expect(answer.status).toBe(204);
      expect(answer.body).toBe('');
      expect(corsHeaders(answer)).toEqual({
        'access-control-allow-origin': DASHBOARD,
        'access-control-allow-methods': 'GET, POST, PUT, PATCH, DELETE',
        'access-control-allow-headers': 'authorization, content-type, if-match, if-none-match, last-event-id',
        'access-control-max-age': '600',
      });
      expect(answer.headers.vary).toBe('Origin');
    });

    it('answers the same for a write with a JSON body and conditional headers, on any operator route', async () => {
      for (const path of [`/api/v1/workspaces/${owner.workspaceId}/keys`, `/api/v1/workspaces/${owner.workspaceId}/policy`, '/api/v1/no-such-route']) {
        const answer = await preflight(path, DASHBOARD, 'PUT', 'authorization, content-type, if-match, if-none-match, last-event-id');
        expect(answer.status).toBe(204);
        expect(answer.headers['access-control-allow-origin']).toBe(DASHBOARD);
        expect(answer.headers['access-control-allow-methods']).toContain('PUT');
      }
    });

    it('answers the OpenAPI document and /.well-known/* too', async () => {
      for (const path of ['/api/docs/openapi.json', '/.well-known/control-signing-keys.json']) {
        expect((await preflight(path, DASHBOARD)).status).toBe(204);
        const answer = await send('GET', path, { Origin: DASHBOARD });
        expect(answer.status).toBe(200);
        expectCrossOrigin(answer);
      }
    });

    it('carries no Access-Control-* header for another origin', async () => {
      for (const origin of [STRANGER, 'http://localhost:5174', 'https://localhost:5173', 'null']) {
        const answer = await preflight('/api/v1/me', origin);
        expect(answer.status).toBe(404);
        expect(corsHeaders(answer)).toEqual({});
        expect(answer.body).toEqual({ detail: 'Not Found' });
      }
    });
  });

  describe('answers to the allowed origin, errors included', () => {
    const get = (path: string, headers: Record<string, string> = {}) => t.http().get(path).set('Origin', DASHBOARD).set(headers);

    it('200 with the session, and the same answer without CORS headers to another origin', async () => {
      const ok = await get('/api/v1/me', bearer(owner)).expect(200);
      expectCrossOrigin(ok);
      expect(ok.body.user.email).toBe(owner.email);
      const stranger = await t.http().get('/api/v1/me').set('Origin', STRANGER).set(bearer(owner)).expect(200);
      expect(corsHeaders(stranger)).toEqual({});
      expect(stranger.headers.vary).toBe('Origin');
    });

    it('401 from the authentication guard', async () => {
      const answer = await get('/api/v1/me').expect(401);
      expectCrossOrigin(answer);
      expect(answer.body).toEqual({ detail: 'session required' });
    });

    it('404 for an unknown workspace, and the framework 404 for an unknown route', async () => {
      const missing = await get('/api/v1/workspaces/ws_missing/keys', bearer(owner)).expect(404);
      expectCrossOrigin(missing);
      expect(missing.body).toEqual({ detail: 'workspace not found' });
      const route = await get('/api/v1/no-such-route', bearer(owner)).expect(404);
      expectCrossOrigin(route);
      expect(route.body).toEqual({ detail: 'Not Found' });
    });

    it('409 from a frozen workspace and 422 from validation', async () => {
      const frozen = await t.signIn();
      await freezeWorkspace(t, frozen.workspaceId);
      const conflict = await t.http().post(`/api/v1/workspaces/${frozen.workspaceId}/keys`).set('Origin', DASHBOARD).set(bearer(frozen)).send({ agent_id: 'a' }).expect(409);
      expectCrossOrigin(conflict);
      expect(conflict.body).toEqual({ detail: 'workspace is frozen' });
      const invalid = await t.http().post(`/api/v1/workspaces/${owner.workspaceId}/keys`).set('Origin', DASHBOARD).set(bearer(owner)).send({ agent_id: 5 }).expect(422);
      expectCrossOrigin(invalid);
      expect(invalid.body.detail[0]).toMatchObject({ loc: ['body', 'agent_id'] });
    });

    it('503 from a service that is not there (no orchestrator)', async () => {
      await mintPassport(t, owner, 'agent');
      const answer = await t.http().post(`/api/v1/workspaces/${owner.workspaceId}/worker-demo-runs`).set('Origin', DASHBOARD).set(bearer(owner)).send({ template_id: 'tpl_code_review' }).expect(503);
      expectCrossOrigin(answer);
      expect(answer.body.detail).toMatchObject({ code: 'orchestrator_not_configured' });
    });

    it('the HTTP stack refusals: malformed JSON, another content type, an undecodable path', async () => {
      const path = `/api/v1/workspaces/${owner.workspaceId}/keys`;
      const auth = { Authorization: `Bearer ${owner.token}`, Origin: DASHBOARD };
      const json = await send('POST', path, { ...auth, 'Content-Type': 'application/json' }, '{"agent_id":');
      expect([json.status, json.body]).toEqual([400, { detail: 'malformed JSON body' }]);
      expectCrossOrigin(json);
      const xml = await send('POST', path, { ...auth, 'Content-Type': 'application/xml' }, '<a/>');
      expect(xml.status).toBe(415);
      expectCrossOrigin(xml);
      const undecodable = await send('GET', '/api/v1/workspaces/%ZZ/keys', auth);
      expect([undecodable.status, undecodable.body]).toEqual([400, { detail: 'malformed request' }]);
      expectCrossOrigin(undecodable);
    });
  });

  describe('outside the operator API', () => {
    it('/internal, /oauth/callback and health answer no CORS at all, preflight or not, allowed origin or not', async () => {
      for (const path of [`/internal/v1/keys/${'0'.repeat(64)}`, `/internal/v1/workspaces/${owner.workspaceId}/snapshot`, '/oauth/callback?state=x&code=y', '/healthz']) {
        const plain = await send('GET', path, { Origin: DASHBOARD });
        expect(corsHeaders(plain)).toEqual({});
        expect(plain.headers.vary).toBeUndefined();
        const pre = await preflight(path, DASHBOARD);
        expect(pre.status).not.toBe(204);
        expect(corsHeaders(pre)).toEqual({});
      }
    });
  });
});

describe('CORS_ORIGINS set to a list, and to *', () => {
  it('allows each listed origin and only those', async () => {
    const t = await startTestApp({ CORS_ORIGINS: 'https://dash.example.com, http://127.0.0.1:8000' });
    try {
      for (const origin of ['https://dash.example.com', 'http://127.0.0.1:8000']) {
        expectCrossOrigin(await t.http().get('/api/v1/me').set('Origin', origin).expect(401), origin);
      }
      for (const origin of [DASHBOARD, 'https://dash.example.com.evil', 'http://127.0.0.1:800']) {
        expect(corsHeaders(await t.http().get('/api/v1/me').set('Origin', origin).expect(401))).toEqual({});
      }
    } finally {
      await t.close();
    }
  });

  it('answers * to any origin, never with credentials', async () => {
    const t = await startTestApp({ CORS_ORIGINS: '*' });
    try {
      expectCrossOrigin(await t.http().get('/api/v1/me').set('Origin', STRANGER).expect(401), '*');
      const pre = await t.http().options('/api/v1/me').set('Origin', STRANGER).set('Access-Control-Request-Method', 'GET').expect(204);
      expect(pre.headers['access-control-allow-origin']).toBe('*');
      expect(pre.headers['access-control-allow-credentials']).toBeUndefined();
      expect(corsHeaders(await t.http().get('/internal/v1/keys/x').set('Origin', STRANGER))).toEqual({});
    } finally {
      await t.close();
    }
  });
});
