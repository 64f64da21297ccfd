import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IdentityIssuer } from 'test/support/identity-issuer';

const ROOT = join(__dirname, '..', '..');

const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });

/**
 * The quick start as a real process: no DATABASE_URL and no REDIS_URL, so an embedded PGlite
 * (behind pglite-socket, one pooled connection) and the in-process hot path; then SIGTERM.
 * (PGlite loads its WebAssembly through dynamic import, which Jest's module sandbox cannot run,
 * so the server runs as a child process, exactly as `npm start` runs it.)
 */
describe('embedded mode server process', () => {
  let dir: string;
  let issuer: IdentityIssuer;
  let child: ChildProcess;
  let base: string;
  let output = '';
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pglite-'));
    issuer = await IdentityIssuer.start();
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    // The preload closes the PGlite on SIGUSR2 (test/support/pglite-close-on-signal.ts).
    const preload = ['-r', require.resolve('ts-node/register/transpile-only'), '-r', join(ROOT, 'test/support/pglite-close-on-signal.ts')];
    child = spawn(process.execPath, [...preload, join(ROOT, 'src/main.ts')], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, NODE_PATH: ROOT, PORT: String(port), HOST: '127.0.0.1', PGLITE_DIR: dir, IDENTITY_ISSUER: issuer.url, LOG_LEVEL: 'info', HTTP_PLATFORM: process.env.HTTP_PLATFORM ?? 'express' },
    });
    child.stdout!.on('data', (d) => (output += d));
    child.stderr!.on('data', (d) => (output += d));
    // Up to 150 s: ts-node transpiles the whole app and PGlite runs every migration, slow on a loaded 2-core machine.
    for (let i = 0; i < 600; i++) {
      try {
        if ((await fetch(`${base}/healthz`)).ok) return;
      } catch {
        /* not listening yet */
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`server did not start: ${output}`);
  }, 180_000);
  afterAll(async () => {
    if (child.exitCode === null) child.kill('SIGKILL');
    await issuer.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('runs every migration on PGlite and serves the API', async () => {
    expect(output).toContain(`"msg":"listening","host":"127.0.0.1","port":${new URL(base).port},"platform":"${process.env.HTTP_PLATFORM ?? 'express'}"`);
    const token = await issuer.token({ sub: 'embedded' });
    const me = await fetch(`${base}/api/v1/me`, { headers: { Authorization: `Bearer ${token}` } });
    expect(me.status).toBe(200);
    const body = (await me.json()) as { default_workspace_id: string };
    const overview = await fetch(`${base}/api/v1/workspaces/${body.default_workspace_id}/overview`, { headers: { Authorization: `Bearer ${token}` } });
    expect(overview.status).toBe(200);
    expect(((await overview.json()) as { workspace: { snapshot_version: number } }).workspace.snapshot_version).toBe(1);
  });

  it('answers 503 database_unavailable at once on every route once its PGlite is closed under the running server; liveness 200, readiness 503 naming database; no crash', async () => {
    const token = await issuer.token({ sub: 'embedded' });
    const headers = { Authorization: `Bearer ${token}` };
    const { default_workspace_id: workspace } = (await (await fetch(`${base}/api/v1/me`, { headers })).json()) as { default_workspace_id: string };
    child.kill('SIGUSR2');
    for (let i = 0; i < 100 && !output.includes('"msg":"test: PGlite closed"'); i++) await new Promise((r) => setTimeout(r, 50));
    const timed = async (path: string, init: RequestInit = {}) => {
      const started = Date.now();
      const res = await fetch(`${base}${path}`, { ...init, headers: { ...headers, 'Content-Type': 'application/json' } });
      return { status: res.status, body: (await res.json()) as unknown, ms: Date.now() - started };
    };
    // Twice: the first request meets the closed database, the second a refused connection.
    for (const round of [1, 2]) {
      for (const [path, init] of [
        ['/api/v1/me', {}],
        [`/api/v1/workspaces/${workspace}/keys`, {}],
        [`/api/v1/workspaces/${workspace}/keys`, { method: 'POST', body: JSON.stringify({ agent_id: 'after-close' }) }],
      ] as [string, RequestInit][]) {
        const res = await timed(path, init);
        expect([round, path, res.status, res.body]).toEqual([round, path, 503, { error: { code: 'database_unavailable', message: 'database unavailable' } }]);
        expect(res.ms).toBeLessThan(2000);
      }
    }
    const live = await timed('/healthz');
    expect([live.status, live.body]).toEqual([200, { ok: true }]);
    const ready = await timed('/readyz');
    expect(ready.status).toBe(503);
    expect(ready.body).toMatchObject({ error: { database: { status: 'down' } } });
    expect(child.exitCode).toBeNull();
    expect(output).toContain('embedded PostgreSQL (PGlite) failed; connections are refused until the service restarts');
  }, 30_000);

  it('shuts down gracefully on SIGTERM', async () => {
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(output).toContain('"msg":"shutting down","signal":"SIGTERM"');
  }, 30_000);
});
