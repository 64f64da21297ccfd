/**
 * What recording `last_used_at` costs the usage projection (issue 22). The projection's one batched
 * statement now also upserts `virtual_key_usage` (a CTE over the inserted events). Measured through
 * the real projector (`usageProjector.project`, one transaction per batch as the consumer commits):
 * BATCHES batches of BATCH usage events naming KEYS real keys of their workspace, beside the
 * baseline of the same run: the same batches naming KEYS key ids that do not exist (the rollups get
 * the same number of rows, the upsert's join finds no key and writes nothing). Alternated in rounds
 * so load drift hits both sides.
 *
 *   NODE_PATH=. node -r ts-node/register/transpile-only bench/key-last-use.ts
 *   BENCH_BATCHES=50 BENCH_BATCH=1000 BENCH_KEYS=200 ...
 */
import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from 'src/database/data-source';
import { runMigrations } from 'src/database/migrate';
import { ENTITIES } from 'src/entities';
import { ParsedEntry } from 'src/modules/streams/streams.service';
import { UsageEntry, UsageProjector } from 'src/modules/usage/usage.projector';
import { UsageEventsRepository } from 'src/modules/usage/usage-events.repository';

const usageProjector = new UsageProjector(new UsageEventsRepository());
import { createSuiteDatabase } from 'test/support/database';
import { median } from 'bench/stats';

const BATCHES = Number(process.env.BENCH_BATCHES ?? 40);
const BATCH = Number(process.env.BENCH_BATCH ?? 1000);
const KEYS = Number(process.env.BENCH_KEYS ?? 200);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

async function main(): Promise<void> {
  const database = await createSuiteDatabase();
  await runMigrations(database.url);
  const ds = new DataSource(dataSourceOptions(database.url, 4, { entities: ENTITIES }));
  await ds.initialize();
  try {
    const ws = `ws_${hex(12)}`;
    const org = `org_${hex(12)}`;
    await ds.query(`INSERT INTO organizations (id) VALUES ($1)`, [org]);
    await ds.query(`INSERT INTO workspaces (id, org_id, slug, env) VALUES ($1, $2, 'bench', 'dev')`, [ws, org]);
    const keys: string[] = [];
    for (let i = 0; i < KEYS; i++) {
      const id = `key_${hex(12)}`;
      keys.push(id);
      await ds.query(
        `INSERT INTO virtual_keys (id, workspace_id, env, agent_id, prefix, key_hash, last4, allowed_models, allowed_tools, tools_mode, scopes, attributes)
         VALUES ($1, $2, 'dev', 'bench', 'ob_test', $3, 'abcd', '["*"]', '["*"]', 'full', '["llm"]', '{}')`,
        [id, ws, hex(32)],
      );
    }

    let clock = Date.now() - 3_600_000;
    const unknown = keys.map(() => `key_${hex(12)}`);
    const batch = (withKeys: boolean): ParsedEntry<UsageEntry>[] =>
      Array.from({ length: BATCH }, (_, i) => {
        const occurred_at = new Date((clock += 1));
        const event = {
          event_id: `evt_${hex(8)}`, workspace_id: ws, kind: 'llm' as const, key_id: (withKeys ? keys : unknown)[i % KEYS], model: 'm', provider: 'p', tool: null,
          pricing_known: true, outcome: 'ok' as const, usd_micros: '3', tokens_in: '10', tokens_out: '5', tokens_cached: '0', tokens_reasoning: '0', occurred_at,
        };
        return { id: `${occurred_at.getTime()}-${i}`, workspaceId: ws, value: { event }, partitionTime: occurred_at } as ParsedEntry<UsageEntry>;
      });
    const run = async (withKeys: boolean) => {
      const batches = Array.from({ length: BATCHES }, () => batch(withKeys));
      const started = performance.now();
      for (const entries of batches) await ds.transaction((manager) => usageProjector.project(manager, entries));
      return (BATCHES * BATCH) / ((performance.now() - started) / 1000);
    };

    await run(true); // warm-up (plans, partition, the upsert's rows)
    await run(false);
    const withKeys: number[] = [];
    const without: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      without.push(await run(false));
      withKeys.push(await run(true));
    }
    const [{ n }] = await ds.query(`SELECT count(*)::int AS n FROM virtual_key_usage`);
    console.log(`\nlast use in the usage projection, ${new Date().toISOString()}, ${ROUNDS} rounds of ${BATCHES} batches of ${BATCH} events, ${KEYS} keys, node ${process.version}\n`);
    console.log('| Events | events/s per round | median | of baseline |\n|---|---|---|---|');
    console.log(`| ${KEYS} unknown key ids (baseline: nothing to record) | ${without.map((x) => Math.round(x)).join(', ')} | ${Math.round(median(without))} | 100% |`);
    console.log(`| key_id of ${KEYS} real keys (one upsert of ${KEYS} rows per batch) | ${withKeys.map((x) => Math.round(x)).join(', ')} | ${Math.round(median(withKeys))} | ${Math.round((100 * median(withKeys)) / median(without))}% |`);
    console.log(`\nvirtual_key_usage rows: ${n}`);
  } finally {
    await ds.destroy();
    await database.drop();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
