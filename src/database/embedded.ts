import { mkdirSync } from 'node:fs';
import { Logger } from '@nestjs/common';
import type { PGlite } from '@electric-sql/pglite';

/**
 * The embedded PostgreSQL used when DATABASE_URL is unset: PGlite stored under `dir`, served on a
 * loopback port by pglite-socket so the ordinary `pg` driver (with a pool of one) talks to it.
 *
 * A PGlite that fails (closed, or aborted on a broken data directory) never recovers in-process,
 * and pglite-socket does not survive it: its query queue stalls for good (every later query hangs)
 * and a transaction it rolls back on a disconnect rejects unhandled, which stops the process. So the
 * server gets the database through `guard`: the first failure is logged once and closes the socket
 * server, and from then on every connection is refused, which the service answers as 503
 * `database_unavailable` (and `/readyz` as `database` down) until it is restarted.
 */
export async function startEmbeddedPostgres(dir: string): Promise<{ url: string; stop: () => Promise<void> }> {
  // Loaded only in embedded mode (CommonJS builds of both packages).
  const { PGlite } = require('@electric-sql/pglite') as typeof import('@electric-sql/pglite');
  const { PGLiteSocketServer } = require('@electric-sql/pglite-socket') as typeof import('@electric-sql/pglite-socket');
  mkdirSync(dir, { recursive: true });
  const db = await PGlite.create(dir);
  const logger = new Logger('database');
  let failed = false;
  const fail = (error: unknown) => {
    if (failed) return;
    failed = true;
    logger.error({ msg: 'embedded PostgreSQL (PGlite) failed; connections are refused until the service restarts', error: error instanceof Error ? error.message : String(error) });
    void server.stop();
  };
  const server = new PGLiteSocketServer({ db: guard(db, fail), host: '127.0.0.1', port: 0 });
  await server.start();
  const address = server.getServerConn();
  logger.log({ msg: 'embedded PostgreSQL (PGlite) started', dir });
  return {
    url: `postgres://postgres@${address}/postgres?sslmode=disable`,
    stop: async () => {
      await server.stop();
      if (!db.closed) await db.close();
    },
  };
}

/**
 * What pglite-socket uses of its database (`waitReady`, `isInTransaction`, `runExclusive`,
 * `execProtocolRawStream`, `exec`), calling `fail` instead of throwing where it cannot take it.
 */
function guard(db: PGlite, fail: (error: unknown) => void): PGlite {
  const guarded: Pick<PGlite, 'waitReady' | 'isInTransaction' | 'runExclusive' | 'execProtocolRawStream' | 'exec'> = {
    waitReady: db.waitReady,
    // Read before each queued query and on each disconnect, outside any catch; throws once closed.
    isInTransaction: () => {
      try {
        return !db.closed && db.isInTransaction();
      } catch (error) {
        fail(error);
        return false;
      }
    },
    // A query that throws (rather than answering an ErrorResponse) means the database is gone.
    runExclusive: <T>(fn: () => Promise<T>) =>
      db.runExclusive(fn).catch((error: unknown) => {
        fail(error);
        throw error;
      }),
    execProtocolRawStream: (message, options) => db.execProtocolRawStream(message, options),
    // Only the ROLLBACK of a disconnected client's transaction, which nobody awaits.
    exec: (query, options) =>
      db.exec(query, options).catch((error: unknown) => {
        fail(error);
        return [];
      }),
  };
  return guarded as PGlite;
}
