/**
 * `npm run emulator`: the gateway emulator as a process, for local development and `demo:seed`
 * (never a code path of the product). It verifies service JWTs with SERVICE_JWT_SECRET, which must
 * be the value control runs with, and listens on 127.0.0.1:GATEWAY_EMULATOR_PORT (default 8080,
 * control's default GATEWAY_URL). Envelopes are sealed under a key that lives only as long as
 * the process: restart it and earlier envelopes no longer open.
 *
 * With REDIS_URL (or REDIS_CLUSTER_NODES, a Redis Cluster's seed nodes) and CONTROL_URL (control's base URL, e.g. http://127.0.0.1:3000) it also resolves
 * virtual keys as a gateway does: `curl -H "Authorization: Bearer ob_test_..." $GATEWAY_URL/v1/key`
 * answers the key context (Redis `{REDIS_PREFIX}:key:{sha256}`, else control's internal lookup) or 401.
 */
import { createClient, createCluster } from 'redis';
import type { Redis } from 'src/database/redis.module';
import { GatewayEmulator } from 'test/support/gateway-emulator';

async function main(): Promise<void> {
  const secret = process.env.SERVICE_JWT_SECRET;
  if (!secret) throw new Error('SERVICE_JWT_SECRET must be set to the value control uses');
  const gw = await GatewayEmulator.start(secret, Number(process.env.GATEWAY_EMULATOR_PORT ?? 8080));
  process.stdout.write(`gateway emulator listening: GATEWAY_URL=${gw.url}\n`);
  let redis: Redis | undefined;
  const nodes = process.env.REDIS_CLUSTER_NODES;
  if ((process.env.REDIS_URL || nodes) && process.env.CONTROL_URL) {
    redis = nodes ? createCluster({ rootNodes: nodes.split(',').map((url) => ({ url: url.trim() })) }) : createClient({ url: process.env.REDIS_URL });
    await redis.connect();
    gw.resolveKeysWith({ redis, prefix: process.env.REDIS_PREFIX || 'ob', controlUrl: process.env.CONTROL_URL.replace(/\/+$/, '') });
    process.stdout.write(`resolving virtual keys: GET ${gw.url}/v1/key\n`);
  }
  const stop = () => void gw.stop().then(() => {
    redis?.destroy();
    process.exit(0);
  });
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
