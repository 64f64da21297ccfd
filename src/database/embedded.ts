import { mkdirSync } from 'node:fs';
import { Logger } from '@nestjs/common';

/**
 * The embedded PostgreSQL used when DATABASE_URL is unset: PGlite stored under `dir`, served on a
 * loopback port by pglite-socket so the ordinary `pg` driver (with a pool of one) talks to it.
 */
export async function startEmbeddedPostgres(dir: string): Promise<{ url: string; stop: () => Promise<void> }> {
  // Loaded only in embedded mode (CommonJS builds of both packages).
  const { PGlite } = require('@electric-sql/pglite') as typeof import('@electric-sql/pglite');
  const { PGLiteSocketServer } = require('@electric-sql/pglite-socket') as typeof import('@electric-sql/pglite-socket');
  mkdirSync(dir, { recursive: true });
  const db = await PGlite.create(dir);
  const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0 });
  await server.start();
  const address = server.getServerConn();
  new Logger('database').log({ msg: 'embedded PostgreSQL (PGlite) started', dir });
  return {
    url: `postgres://postgres@${address}/postgres?sslmode=disable`,
    stop: async () => {
      await server.stop();
      await db.close();
    },
  };
}
