import { INestApplication } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { createApp } from 'src/bootstrap';
import { AppConfig, loadConfig } from 'src/config/config';
import { DevIdentity } from 'src/modules/identity/dev-identity';
import { createSuiteDatabase, REDIS_URL } from 'test/support/database';

export interface BenchApp {
  app: INestApplication;
  config: AppConfig;
  /** `http://127.0.0.1:{port}`, where the app listens. */
  base: string;
  close(): Promise<void>;
}

/**
 * Control in this process, listening on `port`, on a fresh database with the development issuer
 * (for operator tokens); `env` overrides configuration (e.g. REDIS_CLUSTER_NODES with REDIS_URL unset).
 */
export async function startBenchApp(port: number, env: Record<string, string | undefined> = {}): Promise<BenchApp> {
  const database = await createSuiteDatabase();
  const base = `http://127.0.0.1:${port}`;
  const config = loadConfig({
    ...process.env,
    PORT: String(port),
    DATABASE_URL: database.url,
    REDIS_URL,
    REDIS_PREFIX: `bench${randomBytes(4).toString('hex')}`,
    DEV_IDENTITY: '1',
    PUBLIC_URL: base,
    IDENTITY_ISSUER: `${base}/dev-identity`,
    LOG_LEVEL: 'error',
    ...env,
  });
  const app = await createApp(config, { url: database.url, poolSize: config.databasePoolSize, stop: () => Promise.resolve() }, { jobs: false });
  await app.listen(port, '127.0.0.1');
  // The benches' clients (fetch) share this process and may block its loop for seconds between
  // requests; past node's 5 s keep-alive the server could close a socket the client is reusing at
  // that moment (ECONNRESET, seen in the policy-replay bench). Idle sockets stay open here instead.
  (app.getHttpServer() as import('node:http').Server).keepAliveTimeout = 120_000;
  return {
    app,
    config,
    base,
    async close() {
      await app.close();
      await database.drop();
    },
  };
}

/** Calls of the operator API as a development-issuer user `subject`, who gets a default workspace; a status other than 200 throws. */
export async function operatorApi(bench: BenchApp, subject: string) {
  const headers = { Authorization: `Bearer ${await new DevIdentity(bench.config).token(subject, 'bench@example.com', 3600)}`, 'content-type': 'application/json' };
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${bench.base}/api/v1${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
    return res.json() as Promise<Record<string, any>>;
  };
  return { call, ws: (await call('GET', '/me')).default_workspace_id as string };
}
