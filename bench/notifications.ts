/**
 * Operator notifications (issue 32), four figures from one run, each against a baseline measured
 * in the same run (the machine is shared: ratios, not absolutes):
 *   1. delivery throughput to a local receiver, against a bare node client POSTing the same signed
 *      bodies with the same concurrency (16 in flight, the per-endpoint bound): one round in the
 *      first form, then ROUNDS rounds of bare, ours, bare (median ratio);
 *   2. what the outbox write costs the act it rides on: minting a key and holding a call through
 *      HTTP, with `OutboxService.riding` real and answering null (the act's statement carries no
 *      message), alternated act by act (medians);
 *   3. usage ingestion with the budget-threshold check against the projection alone (batches of
 *      BATCH events naming capped keys), alternated;
 *   4. STREAMS open event streams on this process: memory growth and commit-to-stream latency.
 *
 *   NODE_PATH=. node --expose-gc -r ts-node/register/transpile-only bench/notifications.ts
 *   BENCH_FIGURES=2,3 ...   # only these figures (default 1,2,3,4)
 *   BENCH_WATCHED=1 ...     # figure 2 with the workspace watched live (its commits published on Redis)
 */
import { randomBytes } from 'node:crypto';
import { Agent, createServer, request } from 'node:http';
import { AddressInfo } from 'node:net';
import { DataSource } from 'typeorm';
import { signServiceToken } from 'src/platform/auth/service-token';
import { loadConfig } from 'src/config/config';
import { createApp } from 'src/bootstrap';
import { inTransaction } from 'src/database/transaction';
import { DevIdentity } from 'src/modules/identity/dev-identity';
import { DeliveryService } from 'src/modules/notifications/delivery.service';
import { DeliveryWaker } from 'src/modules/notifications/delivery-waker';
import { EventHub } from 'src/modules/notifications/event-hub';
import { OutboxService } from 'src/modules/notifications/outbox.service';
import { signatureHeader } from 'src/modules/notifications/signature';
import { ParsedEntry } from 'src/modules/streams/streams.service';
import { UsageEntry, UsageProjector } from 'src/modules/usage/usage.projector';
import { BudgetThresholds } from 'src/modules/usage/budget-thresholds';
import { createSuiteDatabase, REDIS_URL } from 'test/support/database';
import { median, percentile } from 'bench/stats';

const PORT = Number(process.env.BENCH_PORT ?? 40_000 + Math.floor(Math.random() * 9_000));
const DELIVERIES = Number(process.env.BENCH_DELIVERIES ?? 2000);
const ACTS = Number(process.env.BENCH_ACTS ?? 300);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const BATCHES = Number(process.env.BENCH_BATCHES ?? 10);
const BATCH = Number(process.env.BENCH_BATCH ?? 1000);
/** Figure 3 only: earlier hours of the month in which every capped key was used (0: the month starts with the run). */
const MONTH_HOURS = Number(process.env.BENCH_MONTH_HOURS ?? 0);
const STREAMS = Number(process.env.BENCH_STREAMS ?? 500);
const CONCURRENCY = 16;
const FIGURES = new Set((process.env.BENCH_FIGURES ?? '1,2,3,4').split(','));
/** Figure 2 with a listener of the workspace held on the event hub, as an open event stream holds one (each commit is then published on Redis). */
const WATCHED = process.env.BENCH_WATCHED === '1';
const hex = (n: number) => randomBytes(n).toString('hex');
const gc = () => (global as { gc?: () => void }).gc?.();

async function main(): Promise<void> {
  const database = await createSuiteDatabase();
  const base = `http://127.0.0.1:${PORT}`;
  const config = loadConfig({
    ...process.env, PORT: String(PORT), DATABASE_URL: database.url, REDIS_URL, REDIS_PREFIX: `benchntf${hex(4)}`,
    DEV_IDENTITY: '1', PUBLIC_URL: base, IDENTITY_ISSUER: `${base}/dev-identity`, LOG_LEVEL: 'error',
    NOTIFY_ALLOW_HTTP: '1', NOTIFY_ALLOW_PRIVATE_TARGETS: '1', SERVICE_JWT_SECRET: 'bench-service-secret-0123456789abcdef',
  });
  const app = await createApp(config, { url: database.url, poolSize: config.databasePoolSize, stop: () => Promise.resolve() }, { jobs: false });
  await app.listen(PORT, '127.0.0.1');
  let received = 0;
  const receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received++;
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  const ds = app.get(DataSource);
  const outbox = app.get(OutboxService);
  try {
    const headers = { Authorization: `Bearer ${await new DevIdentity(config).token('bench-notify', 'bench@example.com', 3600)}`, 'content-type': 'application/json' };
    const call = async (method: string, path: string, body?: object, extra: Record<string, string> = headers) => {
      const res = await fetch(`${base}${path}`, { method, headers: extra, body: body === undefined ? undefined : JSON.stringify(body) });
      if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
      return res.json() as Promise<Record<string, unknown>>;
    };
    const ws = (await call('GET', '/api/v1/me')).default_workspace_id as string;
    console.log('notifications bench (shared 2-core machine: ratios within this run)');

    if (FIGURES.has('1')) {
      // 1. Delivery throughput.
      const endpoint = await call('POST', `/api/v1/workspaces/${ws}/notification-endpoints`, { url: hook, event_types: ['*'] });
      const bodies = Array.from({ length: DELIVERIES }, () => ({ id: `msg_${hex(12)}`, body: JSON.stringify({ type: 'key.revoked', timestamp: new Date().toISOString(), data: { key_id: `key_${hex(12)}`, agent_id: 'bench', workspace_id: ws } }) }));
      const agent = new Agent({ keepAlive: true });
      const bare = async () => {
        const started = performance.now();
        let next = 0;
        const post = (m: { id: string; body: string }) =>
          new Promise<void>((resolve, reject) => {
            const ts = Math.floor(Date.now() / 1000);
            const req = request(hook, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'webhook-id': m.id, 'webhook-timestamp': String(ts), 'webhook-signature': signatureHeader([endpoint.secret as string], m.id, ts, m.body) } }, (res) => {
              res.resume();
              res.on('end', resolve);
            });
            req.on('error', reject);
            req.end(m.body);
          });
        await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
          while (next < bodies.length) await post(bodies[next++]);
        }));
        return bodies.length / ((performance.now() - started) / 1000);
      };
      // Ours: the deliveries of DELIVERIES messages emitted in one transaction. The clock starts when
      // delivery is woken, after the commit's stream publishes (the emit's work, not delivery's) have
      // come back from Redis; `fromCommit` also times one batch as the first form did, from just
      // before the commit with those publishes inside.
      const waker = app.get(DeliveryWaker);
      const wake = waker.wake.bind(waker);
      const ours = async (fromCommit: boolean) => {
        received = 0;
        let echoed = 0;
        const listening = app.get(EventHub).listen(ws, () => echoed++);
        await listening.ready;
        let started = 0;
        if (!fromCommit) waker.wake = () => undefined;
        await inTransaction(ds, async (tx) => {
          for (let i = 0; i < DELIVERIES; i++) await outbox.emit(tx, ws, 'key.revoked', { key_id: `key_${hex(12)}`, agent_id: 'bench' });
          started = performance.now();
        });
        if (!fromCommit) {
          while (echoed < DELIVERIES) await new Promise((resolve) => setTimeout(resolve, 5));
          waker.wake = wake;
          started = performance.now();
          wake();
        }
        listening.stop();
        while (received < DELIVERIES) await new Promise((resolve) => setTimeout(resolve, 5));
        const rate = DELIVERIES / ((performance.now() - started) / 1000);
        while (Number((await ds.query(`SELECT count(*) AS n FROM notification_deliveries WHERE state = 'pending'`))[0].n) > 0) await new Promise((resolve) => setTimeout(resolve, 20));
        return rate;
      };
      // Rounds of bare, ours, bare; the first round is the first form (one triple, the bare client cold).
      const ratios: number[] = [];
      for (let round = 0; round <= ROUNDS; round++) {
        const before = await bare();
        received = 0;
        const oursRate = await ours(round === 0);
        const after = await bare();
        const ratio = oursRate / ((before + after) / 2);
        if (round > 0) ratios.push(ratio);
        console.log(
          `1. delivery${round === 0 ? ' (first form: clock from the commit, the stream publishes inside)' : `, round ${round}`}: ${oursRate.toFixed(0)} deliveries/s (claim, sign, POST, log) ` +
            `vs bare node client ${((before + after) / 2).toFixed(0)} POST/s (${before.toFixed(0)}, ${after.toFixed(0)}): ratio ${ratio.toFixed(2)}`,
        );
      }
      console.log(`1. delivery: median ratio ${median(ratios).toFixed(2)} of ${ROUNDS} rounds (${ratios.map((r) => r.toFixed(2)).join(', ')})`);
      await ds.query(`DELETE FROM notification_endpoints WHERE id = $1`, [endpoint.endpoint_id]);
    }

    if (FIGURES.has('2')) {
      // 2. Outbox cost on the act (an endpoint taking everything, so every act also makes a delivery row, left pending).
      await call('POST', `/api/v1/workspaces/${ws}/notification-endpoints`, { url: 'http://127.0.0.1:9/none', event_types: ['*', 'audit.event'], enabled: true });
      app.get(DeliveryService).onApplicationShutdown(); // stop delivering: the act alone is measured
      const watching = WATCHED ? app.get(EventHub).listen(ws, () => undefined) : undefined;
      await watching?.ready;
      await call('POST', `/api/v1/workspaces/${ws}/approval-policies`, {
        name: 'bench', rules: [{ rule_id: 'r1', effect: 'allow', actions: ['tool.call'], tools: ['*'], environments: ['dev', 'stage', 'prod'], approver_roles: ['owner'], approver_user_ids: [], quorum: 1 }],
      });
      const key = await call('POST', `/api/v1/workspaces/${ws}/keys`, { agent_id: 'holder' });
      const service = { Authorization: `Bearer ${await signServiceToken(config.serviceJwtSecret!, 'gateway', 'control', 300)}`, 'content-type': 'application/json' };
      const real = outbox.riding.bind(outbox);
      const timeAct = async (act: () => Promise<unknown>) => {
        const started = performance.now();
        await act();
        return performance.now() - started;
      };
      const mint = () => call('POST', `/api/v1/workspaces/${ws}/keys`, { agent_id: 'bench' });
      const hold = () => call('POST', `/internal/v1/workspaces/${ws}/approvals`, {
        request_id: `req_${hex(12)}`, key_id: key.key_id, tool: 'refund', invocation_tool: 'refund', connection_id: `conn_${hex(12)}`, env: 'dev', safe_summary: {}, reason: 'bench',
      }, service);
      // Each act alternates with and without the write (the first arm swapped every round), so a burst
      // of load from elsewhere falls on both arms alike; the figure is the ratio of the medians of
      // the single acts' times (a garbage collection or a stall skews a mean, not a median).
      for (const [name, act] of [['mint a key', mint], ['hold a call', hold]] as const) {
        for (let i = 0; i < ACTS; i++) await act();
        const withOutbox: number[] = [];
        const without: number[] = [];
        for (let round = 0; round < ROUNDS; round++) {
          for (let i = 0; i < 2 * ACTS; i++) {
            const writes = (i + round) % 2 === 0;
            outbox.riding = writes ? real : () => null as unknown as ReturnType<typeof real>;
            (writes ? withOutbox : without).push(await timeAct(act));
          }
        }
        outbox.riding = real;
        const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
        console.log(
          `2. ${name}${WATCHED ? ' (the workspace watched)' : ''}: median ${median(without).toFixed(2)} ms without the outbox write, ${median(withOutbox).toFixed(2)} ms with it (${ROUNDS} rounds of ${ACTS} acts each way, alternated): ` +
            `cost ${((median(withOutbox) / median(without) - 1) * 100).toFixed(1)}% (means ${mean(without).toFixed(2)} / ${mean(withOutbox).toFixed(2)} ms: ${((mean(withOutbox) / mean(without) - 1) * 100).toFixed(1)}%)`,
        );
      }
      watching?.stop();
    }

    if (FIGURES.has('3')) {
      // 3. Ingestion with the budget check.
      const keys: string[] = [];
      for (let i = 0; i < 50; i++) {
        const id = `key_${hex(12)}`;
        keys.push(id);
        await ds.query(
          `INSERT INTO virtual_keys (id, workspace_id, env, agent_id, prefix, key_hash, last4, allowed_models, allowed_tools, tools_mode, scopes, attributes, budget_micros_usd_month)
           SELECT $1, $2, env, 'bench', 'ob_test', $3, 'abcd', '["*"]', '["*"]', 'full', '["llm"]', '{}', 1000000000000 FROM workspaces WHERE id = $2`,
          [id, ws, hex(32)],
        );
      }
      if (MONTH_HOURS > 0) {
        // The month so far: each key used in each of its earlier hours (up to MONTH_HOURS of them), as the
        // hourly key rollups and, where that table exists (the code of issue 32's follow-up), the keys' months.
        const hours = Math.min(MONTH_HOURS, Math.floor((Date.now() - Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), 1)) / 3_600_000));
        await ds.query(
          `INSERT INTO usage_rollups (workspace_id, dim, bucket, value, event_count, llm_requests, unpriced_count, usd_micros, tokens_in, tokens_out, tokens_cached, tokens_reasoning, tool_calls, partial_count, failure_count, last_ingested_at)
           SELECT $1, 'key', date_trunc('hour', now(), 'UTC') - h * interval '1 hour', k, 10, 10, 0, 1000, 10, 10, 0, 0, 0, 0, 0, now()
           FROM generate_series(1, $2::int) h, unnest($3::text[]) k`,
          [ws, hours, keys],
        );
        if ((await ds.query(`SELECT to_regclass('usage_key_months') IS NOT NULL AS present`))[0].present) {
          await ds.query(`INSERT INTO usage_key_months (workspace_id, key_id, month, usd_micros) SELECT $1, k, date_trunc('month', now(), 'UTC'), $2::bigint * 1000 FROM unnest($3::text[]) k`, [ws, hours, keys]);
        }
        await ds.query(`VACUUM ANALYZE usage_rollups`);
      }
      const budgets = app.get(BudgetThresholds);
      const usageProjector = app.get(UsageProjector);
      const batch = (): ParsedEntry<UsageEntry>[] =>
        Array.from({ length: BATCH }, (_, i) => ({
          id: `${Date.now()}-${i}`,
          workspaceId: ws,
          partitionTime: new Date(),
          value: { event: { event_id: `evt_${hex(12)}`, workspace_id: ws, kind: 'llm', key_id: keys[i % keys.length], model: 'm', provider: 'p', tool: null, pricing_known: true, outcome: 'ok', usd_micros: '100', tokens_in: '1', tokens_out: '1', tokens_cached: '0', tokens_reasoning: '0', occurred_at: new Date() } },
        })) as never;
      const project = async (check: boolean) => {
        const started = performance.now();
        for (let i = 0; i < BATCHES; i++) {
          const entries = batch();
          await inTransaction(ds, async (tx) => {
            // As UsageService's projection does (the check is a part of the projection's statement, then the emits).
            if (!check) return usageProjector.project(tx.manager, entries);
            const budget = budgets.current();
            await budgets.emit(tx, budget, await usageProjector.projectWithBudget(tx.manager, entries, budget));
          });
        }
        return (BATCHES * BATCH) / ((performance.now() - started) / 1000);
      };
      await project(true);
      const checked: number[] = [];
      const plain: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        plain.push(await project(false));
        checked.push(await project(true));
      }
      console.log(`3. ingestion: ${median(checked).toFixed(0)} events/s with the budget check vs ${median(plain).toFixed(0)} without (batches of ${BATCH}, 50 capped keys, ${MONTH_HOURS} earlier hours): ratio ${(median(checked) / median(plain)).toFixed(2)}`);
    }

    if (FIGURES.has('4')) {
      // 4. Open streams.
      gc();
      const before = process.memoryUsage();
      const controllers: AbortController[] = [];
      const arrivals = new Map<string, number[]>();
      for (let i = 0; i < STREAMS; i++) {
        const controller = new AbortController();
        controllers.push(controller);
        const res = await fetch(`${base}/api/v1/workspaces/${ws}/events?types=key.*`, { headers, signal: controller.signal });
        void (async () => {
          const reader = res.body!.getReader();
          const decoder = new TextDecoder();
          try {
            for (;;) {
              const { done, value } = await reader.read();
              if (done) return;
              for (const match of decoder.decode(value).matchAll(/^id: (msg_[0-9a-f]+)$/gm)) arrivals.get(match[1])?.push(performance.now());
            }
          } catch {
            // aborted
          }
        })();
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
      gc();
      const after = process.memoryUsage();
      const latencies: number[] = [];
      for (let i = 0; i < 20; i++) {
        // From the start of the committing transaction (an upper bound of commit-to-stream).
        const started = performance.now();
        let got: number[] = [];
        await inTransaction(ds, async (tx) => {
          const id = await outbox.emit(tx, ws, 'key.rotated', { key_id: `key_${hex(12)}`, agent_id: 'bench' });
          got = [];
          arrivals.set(id!, got);
        });
        await new Promise((resolve) => setTimeout(resolve, 1000));
        for (const at of got) latencies.push(at - started);
        if (got.length !== STREAMS) console.log(`   message ${i}: ${got.length} of ${STREAMS} streams within a second`);
      }
      for (const c of controllers) c.abort();
      console.log(
        `4. ${STREAMS} open streams: rss +${((after.rss - before.rss) / 1048576).toFixed(1)} MiB, heap +${((after.heapUsed - before.heapUsed) / 1048576).toFixed(1)} MiB ` +
          `(server and client in one process); commit-to-stream p50 ${percentile(latencies, 50).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms over ${latencies.length} arrivals`,
      );
    }
  } finally {
    receiver.closeAllConnections();
    receiver.close();
    await app.close();
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
