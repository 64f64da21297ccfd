import { AddressInfo } from 'node:net';
import { Server } from 'node:http';
import type { Page } from 'puppeteer-core';
import { startTestApp, TestApp } from 'test/support/app';
import { buildClient, launchChromium, servePage } from 'test/support/browser';

interface Failure {
  controlError: boolean;
  name: string;
  message: string;
  status?: number;
  body?: unknown;
  detail?: string;
}

// The dashboard as it runs: the published client's ESM build, in headless Chromium, on a page from
// an origin of its own (CORS_ORIGINS), calling the control plane on another (issue 33).
describe('the typed client in a real browser, from the dashboard origin', () => {
  let t: TestApp;
  let baseUrl: string;
  let chromium: Awaited<ReturnType<typeof launchChromium>>;
  let dashboard: Awaited<ReturnType<typeof servePage>>;
  let elsewhere: Awaited<ReturnType<typeof servePage>>;

  beforeAll(async () => {
    buildClient();
    chromium = await launchChromium();
    dashboard = await servePage();
    elsewhere = await servePage();
    t = await startTestApp({ CORS_ORIGINS: dashboard.origin });
    await t.app.listen(0, '127.0.0.1');
    baseUrl = `http://127.0.0.1:${((t.app.getHttpServer() as Server).address() as AddressInfo).port}`;
  }, 120_000);
  afterAll(async () => {
    await chromium?.close();
    await dashboard?.close();
    await elsewhere?.close();
    await t?.close();
  });

  /** A tab on `origin`'s page, its module loaded; what the page logs to its console is kept for a failure's message. */
  async function open(origin: string): Promise<{ page: Page; console: string[] }> {
    const page = await chromium.browser.newPage();
    const console: string[] = [];
    page.on('console', (message) => console.push(message.text()));
    page.on('pageerror', (error) => console.push(String(error)));
    await page.goto(`${origin}/`);
    await page.waitForFunction('window.dashboardReady === true', { timeout: 10_000 });
    return { page, console };
  }

  it('signs in, lists workspaces and keys, mints a key, reads a 404 as a ControlError with its body and the event stream through events()', async () => {
    const token = await t.issuer.token({ sub: 'browser-operator', email: 'browser-operator@example.com' });
    const { page, console } = await open(dashboard.origin);
    const run = (await page.evaluate((args) => (globalThis as unknown as { runDashboard(a: unknown): Promise<unknown> }).runDashboard(args), { baseUrl, token }).catch((error: Error) => {
      throw new Error(`${error.message}\npage console:\n${console.join('\n')}`);
    })) as {
      email: string;
      ws: string;
      workspaces: { workspaces: { id: string; slug: string; frozen: boolean }[] };
      minted: { key_id: string; agent_id: string; plaintext: string; last4: string; status: string };
      keys: { keys: { key_id: string; status: string }[] };
      missing: Failure;
      unauthenticated: Failure;
      event: { status: number; message: { id: string; type: string; timestamp: string; data: Record<string, unknown> } };
    };
    expect(run.email).toBe('browser-operator@example.com');
    expect(run.workspaces.workspaces).toEqual([expect.objectContaining({ id: run.ws, slug: 'default', frozen: false })]);
    expect(run.minted).toMatchObject({ agent_id: 'browser-dashboard', status: 'active' });
    expect(run.minted.plaintext.endsWith(run.minted.last4)).toBe(true);
    expect(run.keys.keys.map((key) => [key.key_id, key.status])).toEqual([[run.minted.key_id, 'active']]);
    expect(run.missing).toEqual({ controlError: true, name: 'ControlError', status: 404, body: { detail: 'key not found' }, detail: 'key not found', message: '404 key not found' });
    expect(run.unauthenticated).toEqual({
      controlError: true,
      name: 'ControlError',
      status: 401,
      body: { detail: 'session not accepted' },
      detail: 'session not accepted',
      message: '401 session not accepted',
    });
    // The event stream, read in the page through the client's events() (fetch streaming with the
    // session header, cross-origin): the revoke of the minted key arrives as its key.revoked message.
    expect(run.event.status).toBe(200);
    expect(run.event.message).toEqual({
      id: expect.stringMatching(/^msg_/),
      type: 'key.revoked',
      timestamp: expect.stringMatching(/Z$/),
      data: { workspace_id: run.ws, key_id: run.minted.key_id, agent_id: 'browser-dashboard' },
    });
    // The key was minted for real, in the operator's workspace.
    const [row] = await t.db.query(`SELECT workspace_id, agent_id FROM virtual_keys WHERE id = $1`, [run.minted.key_id]);
    expect(row).toEqual({ workspace_id: run.ws, agent_id: 'browser-dashboard' });
    await page.close();
  });

  it('is refused by the browser from an origin CORS_ORIGINS does not list', async () => {
    const token = await t.issuer.token({ sub: 'browser-elsewhere', email: 'browser-elsewhere@example.com' });
    const { page } = await open(elsewhere.origin);
    const refused = (await page.evaluate((args) => (globalThis as unknown as { callFromElsewhere(a: unknown): Promise<unknown> }).callFromElsewhere(args), { baseUrl, token })) as Failure;
    // What a browser shows for a CORS refusal: a network error, no status, no body (never a ControlError).
    expect(refused).toEqual({ controlError: false, name: 'TypeError', message: 'Failed to fetch' });
    await page.close();
  });
});
