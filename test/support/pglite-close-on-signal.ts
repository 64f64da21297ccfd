/**
 * Preloaded (`node -r`) into the embedded-mode server process of test/platform/embedded.e2e-spec.ts: on
 * SIGUSR2 the PGlite that src/database/embedded.ts created is closed under its running socket
 * server, as a failing embedded database goes away. Test support only.
 */
const { PGlite } = require('@electric-sql/pglite') as typeof import('@electric-sql/pglite');

const create = PGlite.create.bind(PGlite);
let db: import('@electric-sql/pglite').PGlite | undefined;
PGlite.create = (async (...args: Parameters<typeof create>) => (db = await create(...args))) as typeof PGlite.create;
process.on('SIGUSR2', () => {
  void db?.close().then(() => process.stdout.write('{"msg":"test: PGlite closed"}\n'));
});
