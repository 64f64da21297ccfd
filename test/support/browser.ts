import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer, { Browser } from 'puppeteer-core';

/** Debian's `chromium` package (`.ci/run` installs it when missing); no browser is downloaded. */
export const CHROMIUM = '/usr/bin/chromium';

const ROOT = join(__dirname, '..', '..');
const CLIENT = join(ROOT, 'clients', 'typescript');
const CLIENT_ESM = join(CLIENT, 'dist', 'esm');

/**
 * Headless Chromium with a fresh profile, torn down with `close()`. Fails (never skips) when the
 * browser is not installed, saying how to install it.
 */
export async function launchChromium(): Promise<{ browser: Browser; close(): Promise<void> }> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`the browser test needs Chromium at ${CHROMIUM}: apt-get update && apt-get install -y chromium (.ci/run does it)`);
  }
  const profile = mkdtempSync(join(tmpdir(), 'control-chromium-'));
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    ignoreDefaultArgs: true,
    pipe: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      `--user-data-dir=${profile}`,
      'about:blank',
    ],
  });
  return {
    browser,
    async close() {
      await browser.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** The client's ESM build (`npm run build -w clients/typescript`), rebuilt when missing or older than its sources. */
export function buildClient(): void {
  const built = join(CLIENT_ESM, 'index.js');
  const newest = Math.max(...['index.ts', 'schema.ts'].map((file) => statSync(join(CLIENT, 'src', file)).mtimeMs));
  if (existsSync(built) && statSync(built).mtimeMs >= newest) return;
  execFileSync(process.execPath, [join(CLIENT, 'scripts', 'build.mjs')], { stdio: 'inherit' });
}

const PAGE = `<!doctype html>
<html>
<head>
<meta charset="utf-8">
<title>dashboard</title>
<script type="importmap">{"imports": {"openapi-fetch": "/vendor/openapi-fetch.js"}}</script>
<script type="module" src="/dashboard.js"></script>
</head>
<body></body>
</html>
`;

/** What the page server answers: the page, its script, the client's ESM build and openapi-fetch (its one runtime import), as a bundler would. */
function file(path: string): { type: string; body: string | Buffer } | undefined {
  if (path === '/') return { type: 'text/html; charset=utf-8', body: PAGE };
  if (path === '/dashboard.js') return { type: 'text/javascript', body: readFileSync(join(__dirname, 'browser-page', 'dashboard.js')) };
  if (path === '/vendor/openapi-fetch.js') return { type: 'text/javascript', body: readFileSync(require.resolve('openapi-fetch').replace(/\.c?js$/, '.mjs')) };
  const client = /^\/client\/([a-z.]+\.js)$/.exec(path);
  if (client && existsSync(join(CLIENT_ESM, client[1]))) return { type: 'text/javascript', body: readFileSync(join(CLIENT_ESM, client[1])) };
  return undefined;
}

/** A static server for the dashboard page on 127.0.0.1 (a port of its own: an origin of its own). */
export async function servePage(): Promise<{ origin: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    const found = file(new URL(req.url!, 'http://page').pathname);
    res.writeHead(found ? 200 : 404, { 'Content-Type': found?.type ?? 'text/plain', 'Cache-Control': 'no-store' });
    res.end(found?.body ?? 'not found');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
