/**
 * `npm run openapi`: regenerates `src/openapi/metadata.ts` from the DTOs and controllers,
 * then writes the OpenAPI document to `docs/openapi.json` (what `/api/docs/openapi.json` serves;
 * test/platform/openapi.e2e-spec.ts fails while the two differ). Needs no database: the application is
 * built in Nest's preview mode, which resolves modules without instantiating providers.
 */
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { writeFileSync } from 'node:fs';
import { loadConfig } from 'src/config/config';
import { generateMetadata } from 'src/openapi/generate-metadata';

export const OPENAPI_FILE = 'docs/openapi.json';

async function main(): Promise<void> {
  process.stdout.write(`wrote ${generateMetadata()}\n`);
  // Loaded only now, so the document is built from the metadata just written.
  const { AppModule } = await import('src/app.module');
  const { buildOpenApiDocument, loadOpenApiMetadata } = await import('src/openapi/openapi');
  const config = { ...loadConfig({}), databaseUrl: 'postgres://unused/preview', databasePoolSize: 1 };
  const app = await NestFactory.create(AppModule.register(config, { jobs: false }), { preview: true, logger: false });
  await loadOpenApiMetadata();
  writeFileSync(OPENAPI_FILE, `${JSON.stringify(buildOpenApiDocument(app), null, 2)}\n`);
  process.stdout.write(`wrote ${OPENAPI_FILE}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
