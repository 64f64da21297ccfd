import { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { AppModule } from 'src/app.module';
import { JsonLogger } from 'src/common/logging/json-logger';
import { AppConfig } from 'src/config/config';
import { startEmbeddedPostgres } from 'src/database/embedded';
import { runMigrations } from 'src/database/migrate';
import { setupOpenApi } from 'src/modules/openapi/openapi';

/** Largest JSON body accepted, in bytes (a 256 KiB policy source, escaped, fits). */
export const BODY_LIMIT = 1024 * 1024;
/** Longest path parameter the router accepts; longer ones reach the handlers' own validation. */
const MAX_PARAM_LENGTH = 2048;

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

/** Migrates and builds the application (not yet listening). Used by main and by the e2e suites. */
export async function createApp(config: AppConfig, database: Database, options: { jobs?: boolean } = {}): Promise<INestApplication> {
  await runMigrations(database.url);
  // Fastify: its request path costs a fraction of Express's (bench/README.md). Nothing in the
  // domain code depends on the adapter.
  const app = await NestFactory.create<NestFastifyApplication>(
    AppModule.register({ ...config, databaseUrl: database.url, databasePoolSize: database.poolSize }, options),
    new FastifyAdapter({ bodyLimit: BODY_LIMIT, routerOptions: { maxParamLength: MAX_PARAM_LENGTH } }),
    { logger: new JsonLogger(config.logLevel) },
  );
  await setupOpenApi(app);
  return app;
}
