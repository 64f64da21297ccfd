import { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import createExpress from 'express';
import { IncomingMessage, ServerResponse } from 'node:http';
import { ExpressAdapter } from '@nestjs/platform-express';
import { LeanExpressAdapter } from 'src/common/http/express-adapter';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { AppModule } from 'src/app.module';
import { serveCors } from 'src/common/http/cors';
import { BODY_LIMIT, isMalformedPath, MAX_PARAM_LENGTH, parseFlat, refuseClientError, refuseUnroutable } from 'src/common/http/body';
import { JsonLogger } from 'src/common/logging/json-logger';
import { AppConfig } from 'src/config/config';
import { startEmbeddedPostgres } from 'src/database/embedded';
import { runMigrations } from 'src/database/migrate';
import { setupOpenApi } from 'src/openapi/openapi';

export interface Database {
  url: string;
  poolSize: number;
  stop: () => Promise<void>;
}

/** DATABASE_URL when set, else the embedded PGlite under PGLITE_DIR (one connection). */
export async function openDatabase(config: AppConfig): Promise<Database> {
  if (config.databaseUrl) return { url: config.databaseUrl, poolSize: config.databasePoolSize, stop: () => Promise.resolve() };
  const embedded = await startEmbeddedPostgres(config.pgliteDir);
  return { url: embedded.url, poolSize: 1, stop: embedded.stop };
}

/**
 * The HTTP adapter of HTTP_PLATFORM, both set to answer alike (docs/decisions.md). Express: no
 * `X-Powered-By`, no ETag, query strings parsed flat as Fastify does, bodies read by
 * `ExpressBodyMiddleware` (after the access log and no-store middleware, as Fastify reads them
 * after its hooks). On both, a path the router cannot decode, and a request node's parser refuses,
 * are answered in the `{detail}` shape.
 */
export function httpAdapter(platform: AppConfig['httpPlatform']): ExpressAdapter | FastifyAdapter {
  if (platform === 'fastify') {
    return new FastifyAdapter({
      bodyLimit: BODY_LIMIT,
      routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
      clientErrorHandler: refuseClientError,
      frameworkErrors: (error: { statusCode?: number }, request: { raw: IncomingMessage }, reply: { hijack(): void; raw: ServerResponse }) => {
        reply.hijack();
        refuseUnroutable(request.raw, reply.raw, error.statusCode ?? 400);
      },
    });
  }
  // Set before the adapter's first `use` creates the router, which reads the routing settings once.
  const express = createExpress();
  express.set('case sensitive routing', true);
  express.set('strict routing', true);
  express.disable('x-powered-by');
  express.set('etag', false);
  express.set('query parser', parseFlat);
  // No conditional GET (`If-None-Match: *` would turn any answer into a 304): Fastify has none either.
  Object.defineProperty(express.request, 'fresh', { get: () => false });
  express.use((req: IncomingMessage, res: ServerResponse, next: () => void) => (isMalformedPath(req.url!) ? refuseUnroutable(req, res, 400) : next()));
  return new LeanExpressAdapter(express);
}

/** Migrates and builds the application (not yet listening). Used by main and by the e2e suites. */
export async function createApp(config: AppConfig, database: Database, options: { jobs?: boolean } = {}): Promise<INestApplication> {
  await runMigrations(database.url);
  const app = await NestFactory.create(
    AppModule.register({ ...config, databaseUrl: database.url, databasePoolSize: database.poolSize }, options),
    httpAdapter(config.httpPlatform),
    // Fastify's own body parsers (JSON, text, and Nest's urlencoded); Express's come from ExpressBodyMiddleware.
    { logger: new JsonLogger(config.logLevel), bodyParser: config.httpPlatform === 'fastify' },
  );
  serveCors(app.getHttpServer(), config.corsOrigins);
  await setupOpenApi(app);
  return app;
}
