import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { loadConfig } from 'src/config/config';
import { createApp } from 'src/bootstrap';
import { inTransaction } from 'src/database/transaction';
import { AuditService } from 'src/modules/audit/audit.service';
import { OutboxService } from 'src/modules/notifications/outbox.service';
import { DeliveryService } from 'src/modules/notifications/delivery.service';
import { createSuiteDatabase, REDIS_URL } from 'test/support/database';
import { median } from 'bench/stats';

async function main() {
  const database = await createSuiteDatabase();
  const config = loadConfig({ ...process.env, DATABASE_URL: database.url, REDIS_URL, REDIS_PREFIX: `scr${randomBytes(3).toString('hex')}`, DEV_IDENTITY: '1', LOG_LEVEL: 'error', PUBLIC_URL: 'http://127.0.0.1:1', IDENTITY_ISSUER: 'http://127.0.0.1:1/dev-identity' });
  const app = await createApp(config, { url: database.url, poolSize: config.databasePoolSize, stop: () => Promise.resolve() }, { jobs: false });
  await app.init();
  const ds = app.get(DataSource);
  app.get(DeliveryService).onApplicationShutdown();
  const ws = 'ws_scratch';
  await ds.query(`INSERT INTO organizations (id) VALUES ('org_scratch')`);
  await ds.query(`INSERT INTO workspaces (id, org_id, slug, env) VALUES ($1, 'org_scratch', $1, 'dev')`, [ws]);
  if (process.env.ENDPOINT !== '0') await ds.query(`INSERT INTO notification_endpoints (id, workspace_id, url, event_types, format, enabled, revision, secret) VALUES ('nep_x', $1, 'http://127.0.0.1:9/x', ARRAY['*','audit.event'], 'standard', true, 1, 'whsec_x')`, [ws]);
  for (const q of (process.env.DDL ?? '').split(';').filter(Boolean)) await ds.query(q);
  const audit = app.get(AuditService);
  const outbox = app.get(OutboxService);
  const real = outbox.riding.bind(outbox);
  const arms: Record<string, { rec: number[]; total: number[] }> = { with: { rec: [], total: [] }, without: { rec: [], total: [] } };
  const N = Number(process.env.N ?? 2000);
  for (let i = 0; i < 2 * N + 400; i++) {
    const arm = i % 2 === 0 ? 'with' : 'without';
    outbox.riding = arm === 'with' ? real : () => null as never;
    const t0 = performance.now();
    let t1 = 0;
    await inTransaction(ds, async (tx) => {
      await audit.record(tx, { workspaceId: ws, actor: { userId: 'usr_x', email: 'op@example.com' }, action: 'key.mint', target: `key_${randomBytes(12).toString('hex')}`, detail: { agent_id: 'bench', prefix: 'ob_test', last4: 'abcd', tools_mode: 'full', scopes: ['llm', 'tools'] } });
      t1 = performance.now();
    });
    const t2 = performance.now();
    if (i >= 400) { arms[arm].rec.push(t1 - t0); arms[arm].total.push(t2 - t0); }
  }
  for (const [k, v] of Object.entries(arms)) console.log(k, 'record+begin', median(v.rec).toFixed(3), 'total', median(v.total).toFixed(3));
  await app.close();
  await database.drop?.();
}
void main().then(() => process.exit(0));
