// The dashboard page of the browser test (test/platform/browser.e2e-spec.ts): the published client's ESM
// build, imported as a browser app would, calling the control plane from this page's origin.
import { ControlError, createControlClient } from '/client/index.js';

/** A rejection as plain data (the test reads it outside the page). */
function failure(error) {
  if (error instanceof ControlError) {
    return { controlError: true, name: error.name, status: error.status, body: error.body, detail: error.detail, message: error.message };
  }
  return { controlError: false, name: error.name, message: error.message };
}

/** Signs in, lists workspaces and keys, mints a key, and shows a 404 as the ControlError it is. */
window.runDashboard = async ({ baseUrl, token }) => {
  const client = createControlClient({ baseUrl, token });
  const me = await client.GET('/api/v1/me');
  const ws = me.default_workspace_id;
  const path = { ws };
  const workspaces = await client.GET('/api/v1/workspaces');
  const minted = await client.POST('/api/v1/workspaces/{ws}/keys', { params: { path }, body: { agent_id: 'browser-dashboard' } });
  const keys = await client.GET('/api/v1/workspaces/{ws}/keys', { params: { path } });
  const missing = await client.GET('/api/v1/workspaces/{ws}/keys/{keyId}', { params: { path: { ws, keyId: 'key_missing' } } }).then(
    () => undefined,
    failure,
  );
  const unauthenticated = await createControlClient({ baseUrl, token: 'not-a-token' }).GET('/api/v1/me').then(() => undefined, failure);
  const event = await revokedEvent({ baseUrl, token }, ws, minted.key_id);
  return { email: me.user.email, ws, workspaces, minted, keys, missing, unauthenticated, event };
};

/**
 * The event stream through the client's `events()` (fetch streaming, the session header, from this
 * origin): opens it for `key.*`, revokes `keyId` once the stream has answered, and returns the first
 * message it yields.
 */
async function revokedEvent({ baseUrl, token }, ws, keyId) {
  let opened;
  const streamOpen = new Promise((resolve) => (opened = resolve));
  const fetchWatched = async (request) => {
    const response = await fetch(request);
    if (new URL(request.url).pathname.endsWith('/events')) opened(response.status);
    return response;
  };
  const client = createControlClient({ baseUrl, token, fetch: fetchWatched });
  const stop = new AbortController();
  const stream = client.events(ws, { types: ['key.*'], signal: stop.signal });
  const first = stream.next();
  const status = await streamOpen;
  await client.POST('/api/v1/workspaces/{ws}/keys/{keyId}/revoke', { params: { path: { ws, keyId } } });
  const timeout = new Promise((_, reject) => setTimeout(() => reject(new Error('no event within 10 s')), 10_000));
  try {
    const { value } = await Promise.race([first, timeout]);
    return { status, message: value };
  } finally {
    stop.abort();
  }
}

/** One call from a page whose origin CORS_ORIGINS does not list: the browser refuses the answer. */
window.callFromElsewhere = async ({ baseUrl, token }) =>
  createControlClient({ baseUrl, token }).GET('/api/v1/me').then((me) => ({ answered: me }), failure);

window.dashboardReady = true;
