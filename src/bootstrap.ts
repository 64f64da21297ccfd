import { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { NestExpressApplication } from '@nestjs/platform-express';
import { AppModule } from 'src/app.module';
import { JsonLogger } from 'src/common/logging/json-logger';
import { AppConfig } from 'src/config/config';
import { startEmbeddedPostgres } from 'src/database/embedded';
import { runMigrations } from 'src/database/migrate';
import { setupOpenApi } from 'src/modules/openapi/openapi';

/** Largest JSON body accepted (a 256 KiB policy source, escaped, fits). */
export const BODY_LIMIT = '1mb';

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
  const app = await NestFactory.create<NestExpressApplication>(
    AppModule.register({ ...config, databaseUrl: database.url, databasePoolSize: database.poolSize }, options),
    { logger: new JsonLogger(config.logLevel), bodyParser: false },
  );
  app.useBodyParser('json', { limit: BODY_LIMIT });
  app.getHttpAdapter().getInstance().disable('x-powered-by');
  await setupOpenApi(app);
  return app;
}
