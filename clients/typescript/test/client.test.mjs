// The hand-written layer against a fetch double: authentication, ControlError for each error shape, paging.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ControlError, createControlClient, paginate } from '../dist/esm/index.js';

function recording(answer) {
  const requests = [];
  const fetch = async (request) => {
    requests.push(request);
    const [status, body] = answer(request, requests.length);
    return new Response(typeof body === 'string' ? body : JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
  };
  return { requests, fetch };
}

test('sends the token, or asks getToken before every request', async () => {
  const { requests, fetch } = recording(() => [200, { ok: true }]);
  await createControlClient({ baseUrl: 'https://control.test/', token: 'tok', fetch }).GET('/api/v1/me');
  let n = 0;
  const refreshing = createControlClient({ baseUrl: 'https://control.test', getToken: async () => `t${++n}`, fetch });
  await refreshing.GET('/api/v1/me');
  await refreshing.GET('/api/v1/me');
  assert.deepEqual(requests.map((request) => [request.url, request.headers.get('authorization')]), [
    ['https://control.test/api/v1/me', 'Bearer tok'],
    ['https://control.test/api/v1/me', 'Bearer t1'],
    ['https://control.test/api/v1/me', 'Bearer t2'],
  ]);
  assert.throws(() => createControlClient({ baseUrl: 'https://control.test' }), TypeError);
});

test('every error shape becomes a ControlError with the status and the body', async () => {
  const bodies = {
    404: { detail: 'Workspace not found' },
    422: { detail: [{ loc: ['body', 'name'], msg: 'Field required', type: 'missing' }] },
    503: { error: { code: 'policy_compiler_busy', message: 'policy compiler busy' } },
    502: '<html>bad gateway</html>',
  };
  for (const [status, body] of Object.entries(bodies)) {
    const { fetch } = recording(() => [Number(status), body]);
    const error = await createControlClient({ baseUrl: 'https://control.test', token: 't', fetch }).GET('/api/v1/me').catch((caught) => caught);
    assert.ok(error instanceof ControlError);
    assert.equal(error.status, Number(status));
    assert.deepEqual(error.body, typeof body === 'string' ? undefined : body);
    assert.equal(error.response.status, Number(status));
    assert.equal(error.code, status === '503' ? 'policy_compiler_busy' : undefined);
    assert.equal(error.detail, status === '404' ? 'Workspace not found' : undefined);
  }
  const { fetch } = recording(() => [422, bodies[422]]);
  const invalid = await createControlClient({ baseUrl: 'https://control.test', token: 't', fetch }).GET('/api/v1/me').catch((caught) => caught);
  assert.deepEqual(invalid.issues, bodies[422].detail);
  assert.equal(invalid.detail, undefined);
  assert.equal(invalid.message, '422 body.name: Field required');
});

test('paginate follows next_cursor to the end, keeping the first request\'s filters', async () => {
  const pages = { '': { approvals: [1, 2], next_cursor: 'c1' }, c1: { approvals: [3], next_cursor: 'c2' }, c2: { approvals: [], next_cursor: null } };
  const { requests, fetch } = recording((request) => [200, pages[new URL(request.url).searchParams.get('cursor') ?? '']]);
  const client = createControlClient({ baseUrl: 'https://control.test', token: 't', fetch });
  const items = [];
  for await (const item of paginate(client, '/api/v1/workspaces/{ws}/approvals', { params: { path: { ws: 'ws_1' }, query: { limit: 2 } } }, (page) => page.approvals)) items.push(item);
  assert.deepEqual(items, [1, 2, 3]);
  assert.deepEqual(requests.map((request) => request.url), [
    'https://control.test/api/v1/workspaces/ws_1/approvals?limit=2',
    'https://control.test/api/v1/workspaces/ws_1/approvals?limit=2&cursor=c1',
    'https://control.test/api/v1/workspaces/ws_1/approvals?limit=2&cursor=c2',
  ]);
  const { fetch: failing } = recording((request, n) => (n === 1 ? [200, pages['']] : [400, { detail: 'Invalid cursor' }]));
  const seen = [];
  const error = await (async () => {
    for await (const page of paginate(createControlClient({ baseUrl: 'https://control.test', token: 't', fetch: failing }), '/api/v1/workspaces/{ws}/approvals', { params: { path: { ws: 'ws_1' } } })) seen.push(page);
  })().catch((caught) => caught);
  assert.deepEqual(seen, [pages['']]);
  assert.ok(error instanceof ControlError && error.detail === 'Invalid cursor');
});
