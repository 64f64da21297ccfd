/**
 * Snapshot assembly benchmark: `NODE_PATH=. node -r ts-node/register/transpile-only bench/snapshot.ts`.
 * One workspace holding 32 route qualifiers, 200 active model connections and 100 active tool
 * connections (and a 200-entry pricebook). Reports the time to build the whole snapshot from
 * committed state (PublicationService.build: one REPEATABLE READ transaction, every registered
 * part, mapping included) beside the time, in the same run, to read those same rows with the same
 * predicates in one REPEATABLE READ transaction and nothing else. Needs the PostgreSQL and Redis
 * of `npm test`. BENCH_ITERATIONS (default 200) sets the samples per row.
 */
import { performance } from 'node:perf_hooks';
import { DataSource } from 'typeorm';
import { DevIdentity } from 'src/modules/identity/dev-identity';
import { PublicationService } from 'src/modules/publication/publication.service';
import { startBenchApp } from 'bench/in-process-app';
import { seedSnapshotRows } from 'bench/snapshot-rows';
import { percentile } from 'bench/stats';

const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 200);
const PORT = 3903;
const QUALIFIERS = 32;
const MODELS = 200;
const CONNECTIONS = 100;


async function timed(work: () => Promise<unknown>): Promise<number[]> {
  for (let i = 0; i < 10; i++) await work(); // warm-up
  const samples: number[] = [];
  for (let i = 0; i < ITERATIONS; i++) {
    const start = performance.now();
    await work();
    samples.push(performance.now() - start);
  }
  return samples;
}

async function seed(db: DataSource, ws: string): Promise<void> {
  await seedSnapshotRows(db, ws, { qualifiers: QUALIFIERS, targetsPerQualifier: 8, models: MODELS, tools: CONNECTIONS });
  const prices = Array.from({ length: MODELS }, (_, i) => ({
    model: `bench-model-${i}*`,
    input_micros_usd_per_mtok: 1000,
    output_micros_usd_per_mtok: 2000,
    cached_micros_usd_per_mtok: 500,
    reasoning_micros_usd_per_mtok: 2000,
  }));
  await db.query(`INSERT INTO pricebooks (workspace_id, revision, prices) VALUES ($1, 1, $2)`, [ws, JSON.stringify(prices)]);
}

/** The same rows, the same predicates, one consistent read, no mapping. */
function readRows(db: DataSource, ws: string): Promise<unknown> {
  return db.transaction('REPEATABLE READ', async (m) => {
    await m.query(`SELECT * FROM workspaces WHERE id = $1`, [ws]);
    await m.query(`SELECT * FROM route_qualifiers WHERE workspace_id = $1 ORDER BY qualifier_id`, [ws]);
    await m.query(`SELECT * FROM connections WHERE workspace_id = $1 AND kind = 'model' AND status = 'active' AND credential_envelope IS NOT NULL ORDER BY created_at, id`, [ws]);
    await m.query(`SELECT * FROM connections WHERE workspace_id = $1 AND kind <> 'model' AND status = 'active' AND credential_envelope IS NOT NULL ORDER BY id`, [ws]);
    await m.query(`SELECT * FROM pricebooks WHERE workspace_id = $1`, [ws]);
  });
}

async function main(): Promise<void> {
  const { app, config, base, close } = await startBenchApp(PORT);
  const rows: string[] = [];
  try {
    const token = await new DevIdentity(config).token('bench-snapshot', 'bench@example.com', 3600);
    const me = (await (await fetch(`${base}/api/v1/me`, { headers: { Authorization: `Bearer ${token}` } })).json()) as { default_workspace_id: string };
    const ws = me.default_workspace_id;
    const db = app.get(DataSource);
    await seed(db, ws);
    const publications = app.get(PublicationService);
    const snapshot = (await publications.build(ws))!;
    const counts = [(snapshot.route_qualifiers as unknown[]).length, (snapshot.models as unknown[]).length, (snapshot.connections as unknown[]).length];
    if (counts.join() !== [QUALIFIERS, MODELS, CONNECTIONS].join()) throw new Error(`snapshot holds ${counts.join('/')}`);
    const bytes = Buffer.byteLength(JSON.stringify(snapshot));

    // Alternate the two measures so background load skews both alike.
    const build: number[] = [];
    const read: number[] = [];
    for (let round = 0; round < 3; round++) {
      build.push(...(await timed(() => publications.build(ws))));
      read.push(...(await timed(() => readRows(db, ws))));
    }
    const fmt = (ms: number) => ms.toFixed(2);
    rows.push(`| build snapshot (${bytes} bytes of JSON) | ${fmt(percentile(build, 50))} ms | ${fmt(percentile(build, 99))} ms |`);
    rows.push(`| read the same rows, one transaction | ${fmt(percentile(read, 50))} ms | ${fmt(percentile(read, 99))} ms |`);
  } finally {
    await close();
  }
  process.stdout.write(
    [
      `${new Date().toISOString()}, ${QUALIFIERS} qualifiers, ${MODELS} models, ${CONNECTIONS} connections, ${ITERATIONS * 3} samples per row, node ${process.version}`,
      '',
      '| Measure | p50 | p99 |',
      '|---|---|---|',
      ...rows,
      '',
    ].join('\n'),
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
