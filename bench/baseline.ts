/**
 * The baseline of the benchmark: a bare node `http` server doing the same reads as control with the
 * same `pg` pool size and the same named statements, and nothing else (no framework, no auth, no
 * hot path). Started by bench/run.ts with DATABASE_URL, DATABASE_POOL_SIZE and PORT.
 */
import { createServer } from 'node:http';
import { Pool } from 'pg';
import { KeyDocumentRow, KeyRow, toKeyContext, toKeyDocument } from 'src/modules/keys/dto/key.document';
import { BY_HASH, LIST } from 'src/modules/keys/keys.service';
import { Env } from 'src/platform/access/context';

const pool = new Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.DATABASE_POOL_SIZE ?? 10) });
const KEY = /^\/keys\/([0-9a-f]{64})$/;
const LIST_PATH = /^\/workspaces\/([^/]+)\/keys$/;
/** KEY_IDLE_DAYS's default: the mapper's `idle` computed as control computes it. */
const IDLE_DAYS = 90;

const server = createServer((req, res) => {
  const reply = (status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
    res.end(JSON.stringify(body));
  };
  const key = KEY.exec(req.url ?? '');
  const list = LIST_PATH.exec(req.url ?? '');
  if (key) {
    pool.query<KeyRow & { env: Env }>({ ...BY_HASH, values: [key[1]] }).then(
      ({ rows }) => (rows[0] ? reply(200, toKeyContext(rows[0], new Date())) : reply(404, { detail: 'key not found' })),
      () => reply(500, { detail: 'error' }),
    );
  } else if (list) {
    pool.query<KeyDocumentRow>({ ...LIST, values: [list[1]] }).then(
      ({ rows }) => {
        const now = new Date();
        reply(200, { keys: rows.map((row) => toKeyDocument(row, now, IDLE_DAYS)) });
      },
      () => reply(500, { detail: 'error' }),
    );
  } else {
    reply(404, { detail: 'not found' });
  }
});
server.listen(Number(process.env.PORT), '127.0.0.1', () => process.stdout.write('ready\n'));
// Exit normally on the bench's SIGTERM, so a CPU profile (BENCH_CPU_PROF) is written.
process.once('SIGTERM', () => process.exit(0));
