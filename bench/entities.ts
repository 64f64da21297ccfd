/**
 * What the entity API costs against a hand-written statement, in the same run (issue 16): the
 * per-request user lookup (a unique-key SELECT of one row) and a 20-row keyset page (the shape of
 * every operator list), each as a named statement (`namedQuery`, what the hot paths use), as an
 * unnamed statement (`dataSource.query`), and through TypeORM (`findOneBy`, the query builder).
 * BENCH_ROUNDS (3) alternating rounds of BENCH_DURATION_MS (3000) per variant, 10 concurrent
 * callers on a pool of 10; each row is the median round.
 * Run: `NODE_PATH=. node -r ts-node/register/transpile-only bench/entities.ts` with the PostgreSQL
 * of `npm test` (DATABASE_URL). A fresh database is created and dropped.
 */
import { DataSource } from 'typeorm';
import { dataSourceOptions } from 'src/database/data-source';
import { runMigrations } from 'src/database/migrate';
import { namedQuery } from 'src/database/named-query';
import { User } from 'src/modules/identity/entities/user.entity';
import { WorkerSessionProfile } from 'src/modules/workers/entities/worker-session-profile.entity';
import { createSuiteDatabase } from 'test/support/database';
import { median } from 'bench/stats';
import { ENTITIES } from 'src/entities';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 3000);
const CONCURRENCY = 10;
const USERS = 10_000;
const PROFILES = 2_000;
const PAGE = 20;

/** Calls per second of `work` from CONCURRENCY loops for DURATION_MS. */
async function rate(work: (i: number) => Promise<unknown>): Promise<number> {
  let calls = 0;
  const end = Date.now() + DURATION_MS;
  const start = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (Date.now() < end) await work(calls++);
    }),
  );
  return calls / (Number(process.hrtime.bigint() - start) / 1e9);
}


async function main(): Promise<void> {
  const db = await createSuiteDatabase();
  await runMigrations(db.url);
  const dataSource = new DataSource(dataSourceOptions(db.url, CONCURRENCY, { entities: ENTITIES }));
  await dataSource.initialize();
  try {
    await dataSource.query(`INSERT INTO users (id, issuer, subject, email) SELECT 'usr_' || i, 'https://issuer.test', 'sub-' || i, 'u' || i || '@example.test' FROM generate_series(1, $1) i`, [USERS]);
    await dataSource.query(`INSERT INTO organizations (id) VALUES ('org_bench')`);
    await dataSource.query(`INSERT INTO workspaces (id, org_id, slug, env) VALUES ('ws_bench', 'org_bench', 'bench', 'dev')`);
    await dataSource.query(
      `INSERT INTO worker_session_profiles (id, workspace_id, name, environment_class, status, created_by_user_id, created_at)
       SELECT 'wsp_' || lpad(i::text, 6, '0'), 'ws_bench', 'profile-' || i, 'code', 'active', 'usr_1', timestamptz '2026-01-01' + i * interval '1 second'
       FROM generate_series(1, $1) i`,
      [PROFILES],
    );
    await dataSource.query(`ANALYZE`);
    const subject = (i: number) => `sub-${(i % USERS) + 1}`;
    const after = (i: number) => new Date(Date.parse('2026-01-01T00:00:00Z') + ((i % (PROFILES - PAGE)) + 1) * 1000);
    const userText = `SELECT id, email FROM users WHERE issuer = $1 AND subject = $2`;
    const pageText = `SELECT id, workspace_id, name, environment_class, description, status, created_by_user_id, created_at, revoked_at
      FROM worker_session_profiles WHERE workspace_id = $1 AND (created_at, id) > ($2, $3) ORDER BY created_at, id LIMIT ${PAGE}`;
    const variants: [string, (i: number) => Promise<unknown>][] = [
      ['user lookup: named statement', (i) => namedQuery(dataSource, { name: 'bench_user', text: userText }, ['https://issuer.test', subject(i)])],
      ['user lookup: unnamed statement', (i) => dataSource.query(userText, ['https://issuer.test', subject(i)])],
      ['user lookup: repository findOneBy', (i) => dataSource.manager.findOneBy(User, { issuer: 'https://issuer.test', subject: subject(i) })],
      ['20-row page: named statement', (i) => namedQuery(dataSource, { name: 'bench_page', text: pageText }, ['ws_bench', after(i), ''])],
      ['20-row page: unnamed statement', (i) => dataSource.query(pageText, ['ws_bench', after(i), ''])],
      [
        '20-row page: query builder',
        (i) =>
          dataSource.manager
            .createQueryBuilder(WorkerSessionProfile, 'p')
            .where('p.workspaceId = :workspaceId', { workspaceId: 'ws_bench' })
            .andWhere('(p.createdAt, p.id) > (:at, :id)', { at: after(i), id: '' })
            .orderBy('p.createdAt')
            .addOrderBy('p.id')
            .limit(PAGE)
            .getMany(),
      ],
    ];
    for (const [, work] of variants) await rate(work); // warm-up: statements prepared, pool filled
    const results = new Map<string, number[]>(variants.map(([name]) => [name, []]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, work] of variants) results.get(name)!.push(await rate(work));
    }
    console.log(`${new Date().toISOString()}, ${CONCURRENCY} callers, pool ${CONCURRENCY}, median of ${ROUNDS} rounds of ${DURATION_MS} ms, node ${process.version}`);
    console.log('| Variant | calls/s | of the named statement |\n|---|---|---|');
    for (const group of ['user lookup', '20-row page']) {
      const named = median(results.get(`${group}: named statement`)!);
      for (const [name] of variants.filter(([n]) => n.startsWith(group))) {
        const value = median(results.get(name)!);
        console.log(`| ${name} | ${Math.round(value)} | ${Math.round((value / named) * 100)}% |`);
      }
    }
  } finally {
    await dataSource.destroy();
    await db.drop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
