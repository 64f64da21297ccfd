import { INestApplication } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { IncomingMessage, Server, ServerResponse } from 'node:http';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { Role } from 'src/platform/access/actions';
import { createApp } from 'src/bootstrap';
import { AppConfig, loadConfig } from 'src/config/config';
import { createSuiteDatabase, REDIS_URL } from 'test/support/database';
import { IdentityIssuer } from 'test/support/identity-issuer';
import { loadDocument, ResponseRecorder } from 'test/support/observed-responses';

export interface Operator {
  token: string;
  userId: string;
  email: string;
  /** The `default` workspace provisioned at first sign-in. */
  workspaceId: string;
  orgId: string;
}

export interface TestApp {
  app: INestApplication;
  config: AppConfig;
  issuer: IdentityIssuer;
  db: DataSource;
  /** The suite's own database, reached directly (not through `via`). */
  databaseUrl: string;
  http: () => request.Agent;
  /** A new operator, signed in through GET /me (which provisions their own workspace). */
  signIn(sub?: string): Promise<Operator>;
  /** A new operator added to `owner`'s workspace with `role`. */
  member(owner: Operator, role: Role, workspaceId?: string): Promise<Operator>;
  close(): Promise<void>;
}

/**
 * Feeds every response to the recorder from the node server itself, below either adapter: the
 * body as written, and the route template the access guard records on the request
 * (src/common/http/route-template.ts; none for an unknown route or a request refused before the guard).
 */
function recordResponses(server: Server, recorder: ResponseRecorder): void {
  server.prependListener('request', (req: IncomingMessage & { routeTemplate?: string }, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    const keep = (chunk: unknown, encoding: unknown) => {
      if (chunk !== undefined && chunk !== null && typeof chunk !== 'function') {
        chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8'));
      }
    };
    const { write, end } = res;
    res.write = function (this: ServerResponse, chunk: unknown, ...rest: unknown[]) {
      keep(chunk, rest[0]);
      return (write as (...args: unknown[]) => boolean).call(this, chunk, ...rest);
    } as ServerResponse['write'];
    res.end = function (this: ServerResponse, chunk?: unknown, ...rest: unknown[]) {
      keep(chunk, rest[0]);
      return (end as (...args: unknown[]) => ServerResponse).call(this, chunk, ...rest);
    } as ServerResponse['end'];
    // A finished response, or one its client closed after the headers went out (an event stream
    // never finishes: the reader disconnects); recorded once.
    let recorded = false;
    const recordOnce = () => {
      if (recorded || !res.headersSent) return;
      recorded = true;
      recorder.record(req.method!, req.routeTemplate, res.statusCode, res.getHeader('content-type') as string | undefined, Buffer.concat(chunks).toString('utf8'));
    };
    res.once('finish', recordOnce);
    res.once('close', recordOnce);
  });
}

export const SERVICE_SECRET = 'test-service-secret-0123456789abcdef';

/**
 * The whole application on its own fresh database and Redis prefix, with a local identity issuer.
 * `env` overrides configuration (as the process environment would). With `databaseUrl` it runs on
 * another app's database instead (a second replica), which it leaves in place when closed; `via`
 * gives the URL the application reaches its database by (a TCP proxy in front of it).
 */
export async function startTestApp(
  env: Record<string, string | undefined> = {},
  options: { jobs?: boolean; databaseUrl?: string; via?: (databaseUrl: string) => Promise<string> } = {},
): Promise<TestApp> {
  const database = options.databaseUrl ? { url: options.databaseUrl, drop: () => Promise.resolve() } : await createSuiteDatabase();
  const url = options.via ? await options.via(database.url) : database.url;
  const issuer = await IdentityIssuer.start();
  const config = loadConfig({
    DATABASE_URL: url,
    REDIS_URL,
    REDIS_PREFIX: `t${randomBytes(4).toString('hex')}`,
    IDENTITY_ISSUER: issuer.url,
    SERVICE_JWT_SECRET: SERVICE_SECRET,
    LOG_LEVEL: 'error',
    DATABASE_POOL_SIZE: '5',
    HTTP_PLATFORM: process.env.HTTP_PLATFORM,
    ...env,
  });
  const app = await createApp(config, { url, poolSize: config.databasePoolSize, stop: () => Promise.resolve() }, { jobs: options.jobs ?? false });
  const recorder = new ResponseRecorder(loadDocument());
  recordResponses(app.getHttpServer(), recorder);
  await app.init();
  // Fastify routes only after `ready()`, which `listen()` would have called (Express has no such step).
  if (config.httpPlatform === 'fastify') await (app.getHttpAdapter().getInstance() as { ready(): Promise<unknown> }).ready();
  const http = () => request.agent(app.getHttpServer());

  const signIn = async (sub = `user-${randomBytes(4).toString('hex')}`): Promise<Operator> => {
    const email = `${sub}@example.com`;
    const token = await issuer.token({ sub, email });
    const res = await http().get('/api/v1/me').set('Authorization', `Bearer ${token}`).expect(200);
    return { token, userId: res.body.user.id, email, workspaceId: res.body.default_workspace_id, orgId: res.body.workspaces[0].org_id };
  };

  return {
    app,
    config,
    issuer,
    db: app.get(DataSource),
    databaseUrl: database.url,
    http,
    signIn,
    async member(owner, role, workspaceId = owner.workspaceId) {
      const user = await signIn();
      await http()
        .put(`/api/v1/workspaces/${workspaceId}/members/${user.userId}`)
        .set('Authorization', `Bearer ${owner.token}`)
        .send({ role })
        .expect(200);
      return { ...user, workspaceId };
    },
    async close() {
      recorder.flush();
      await app.close();
      await issuer.stop();
      await database.drop();
    },
  };
}

export const bearer = (op: { token: string }) => ({ Authorization: `Bearer ${op.token}` });
