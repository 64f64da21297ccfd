// Profiling harness (not part of the project): seeds a DB, then EXPLAIN ANALYZEs one usage batch.
import { DataSource } from 'typeorm';
import { dataSourceOptions } from 'src/database/data-source';
import { runMigrations } from 'src/database/migrate';
import { monthStart } from 'src/modules/streams/streams.service';
import { usageProjector } from 'src/modules/usage/usage.projector';
import { createSuiteDatabase } from 'test/support/database';

const ROWS = Number(process.env.ROWS ?? 1_000_000);
async function main() {
  const db = await createSuiteDatabase();
  try {
    await runMigrations(db.url);
    const ds = await new DataSource(dataSourceOptions(db.url, 4)).initialize();
    const now = new Date();
    for (let m = -3; m <= 1; m++) await ds.query(`SELECT read_model_ensure_partition('usage_events', $1::date)`, [monthStart(now, m).toISOString().slice(0, 10)]);
    await ds.query(`INSERT INTO organizations (id) VALUES ('org_bench')`);
    await ds.query(`INSERT INTO workspaces (id, org_id, slug, env) SELECT 'ws_bench_' || lpad(i::text, 4, '0'), 'org_bench', 's' || i, 'dev' FROM generate_series(0, 999) i`);
    await ds.query(`INSERT INTO usage_events (workspace_id, occurred_at, event_id, ingested_at, kind, key_id, model, provider, tool, pricing_known, outcome, usd_micros, tokens_in, tokens_out, tokens_cached, tokens_reasoning)
       SELECT 'ws_bench_' || lpad((i % 1000)::text, 4, '0'), now() - (i || ' seconds')::interval * 5, 'evt_' || i, now(), 'llm', 'key_' || (i % 20), 'model_' || (i % 6), 'provider_1', NULL, true, 'ok', 3, 10, 5, 0, 0
       FROM generate_series(1, $1) i`, [ROWS]);
    await ds.query(`VACUUM ANALYZE`);
    const explain = process.env.EXPLAIN === '1';
    for (let b = 0; b < Number(process.env.BATCHES ?? 3); b++) {
      const entries = Array.from({ length: 10_000 }, (_, j) => {
        const i = b * 10_000 + j;
        return { id: `${i}-0`, workspaceId: `ws_bench_${String(i % 1000).padStart(4, '0')}`, partitionTime: null, value: { event: {
          event_id: `evt_ingest_${i}`, workspace_id: `ws_bench_${String(i % 1000).padStart(4, '0')}`, kind: 'llm' as const, key_id: `key_${i % 20}`, model: `model_${i % 6}`, provider: 'provider_1', tool: null,
          pricing_known: true, outcome: 'ok' as const, usd_micros: '3', tokens_in: '10', tokens_out: '5', tokens_cached: '0', tokens_reasoning: '0', occurred_at: new Date(now.getTime() - (i % 1000) * 1000) } } };
      });
      const start = process.hrtime.bigint();
      await ds.transaction(async (m) => {
        const manager = explain ? { query: async (sql: string, params: unknown[]) => {
          if (!sql.includes('usage_events')) return m.query(sql, params);
          const rows = await m.query(`EXPLAIN (ANALYZE, BUFFERS, VERBOSE, WAL) ${sql}`, params);
          console.log(rows.map((r: Record<string, string>) => r['QUERY PLAN']).join('\n'));
          return [];
        } } : m;
        await usageProjector.project(manager as never, entries as never);
      });
      console.log(`batch ${b}: ${(Number(process.hrtime.bigint() - start) / 1e6).toFixed(0)} ms`);
    }
    await ds.destroy();
  } finally {
    await db.drop();
  }
}
main().catch((e) => { console.error(e); process.exit(1); });
