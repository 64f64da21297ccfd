import { Global, Inject, Logger, Module, OnApplicationShutdown } from '@nestjs/common';
import { createClient, createCluster, RedisClientType, RedisClusterType } from 'redis';
import { APP_CONFIG, AppConfig } from 'src/config/config';
import { withDeadline } from 'src/common/time/deadline';
import { errorFields } from 'src/common/logging/error-fields';

/**
 * The Redis connection (node-redis): one server (`REDIS_URL`, `createClient`) or a Redis Cluster
 * (`REDIS_CLUSTER_NODES`, `createCluster`). Both answer the same key commands (every command the
 * service sends names one key, so the cluster routes it to the node holding that key's slot);
 * what differs goes through the helpers below (`sendRaw`, `pingRedis`, `redisReady`).
 */
export type Redis = RedisClientType | RedisClusterType;

/** The REDIS provider: the connection, or null when neither is set (in-process hot path, no streams). */
export const REDIS = Symbol('REDIS');

/** How long a connection attempt, and a command of the hot path, may take. */
export const REDIS_TIMEOUT_MS = 2000;

/** Where the service's Redis is: the two settings of AppConfig. */
export type RedisTarget = Pick<AppConfig, 'redisUrl' | 'redisClusterNodes'>;

export interface RedisOptions {
  /** Queue commands while disconnected (each waits at most `commandTimeout`); default: fail at once. */
  offlineQueue?: boolean;
  /** node-redis's own command timeout (counts until the command is written). */
  commandTimeout?: number;
  /** Log the start and end of an outage (the main connection does; a second one would repeat it). */
  logOutages?: boolean;
}

const socket = { connectTimeout: REDIS_TIMEOUT_MS, reconnectStrategy: (attempt: number) => Math.min((attempt + 1) * 200, 2000) };

/** How often a cluster whose nodes failed is probed until every master answers again. */
const CLUSTER_PROBE_MS = 500;

/** Clusters whose slots are known and whose masters all answered the last probe. */
const readyClusters = new WeakSet<RedisClusterType>();

export const isCluster = (redis: Redis): redis is RedisClusterType => 'masters' in redis;

/**
 * Commands fail fast while Redis is unreachable: no offline queue (a command issued while a
 * connection is down is rejected at once with ClientOfflineError), 2 s connect timeout, and the
 * connection keeps reconnecting in the background. A command in flight when the connection drops
 * is rejected, not retried. The connection is opened in the background, never awaited, so a
 * process starts while Redis is down. One log line marks the start of an outage, one its end.
 * Null when neither REDIS_URL nor REDIS_CLUSTER_NODES is set.
 */
export function createRedis(target: RedisTarget, options: RedisOptions = {}): Redis | null {
  const logger = new Logger('redis');
  let down = false;
  const failed = (error: Error) => {
    if (!down && options.logOutages !== false) logger.warn({ msg: 'redis unavailable', ...errorFields(error) });
    down = true;
  };
  const back = () => {
    if (down && options.logOutages !== false) logger.log({ msg: 'redis available again' });
    down = false;
  };
  const client = { disableOfflineQueue: !options.offlineQueue, socket };
  const commandOptions = options.commandTimeout ? { commandOptions: { timeout: options.commandTimeout } } : {};
  if (target.redisClusterNodes) {
    return keepClusterConnected(createCluster({ rootNodes: target.redisClusterNodes.map((url) => ({ url })), defaults: client, ...commandOptions }), failed, back);
  }
  if (!target.redisUrl) return null;
  const single: RedisClientType = createClient({ url: target.redisUrl, ...client, ...commandOptions });
  // node-redis emits 'error' for every failed attempt; an unhandled one would crash the process.
  single.on('error', failed);
  single.on('ready', back);
  // Settles only once connected (the strategy never gives up); failures reach 'error' above.
  single.connect().catch(() => undefined);
  return single;
}

/**
 * A cluster connection does not retry its first slot discovery, and its node connections
 * reconnect on their own but say nothing when they are back. So: the discovery is retried, and
 * after any failure every master is probed until all answer; then the cluster emits 'ready', as a
 * single client does when it reconnects. A failover is followed by the client itself when the
 * demoted node answers MOVED (node-redis reads the slot map again); when the old master is gone,
 * the probe reads the slot map again.
 */
function keepClusterConnected(cluster: RedisClusterType, failed: (error: Error) => void, back: () => void): RedisClusterType {
  let timer: NodeJS.Timeout | null = null;
  let probing = false;
  let stopped = false;
  const probe = async () => {
    if (probing || stopped) return;
    probing = true;
    try {
      if (!cluster.isOpen) await cluster.connect();
      await withDeadline(pingRedis(cluster), REDIS_TIMEOUT_MS, 'Redis').catch(async () => {
        // A master that does not answer may have been replaced (a replica promoted). node-redis
        // reloads the slot map only when a command meets MOVED, which a dead node never answers:
        // reload it here (from the seed nodes when the node asked first is the dead one).
        const start = cluster.masters.find((master) => master.client)?.client;
        if (start) await cluster._slots.rediscover(start);
        await withDeadline(pingRedis(cluster), REDIS_TIMEOUT_MS, 'Redis');
      });
      if (timer) clearInterval(timer);
      timer = null;
      readyClusters.add(cluster);
      back();
      cluster.emit('ready');
    } catch (error) {
      onFailure(error as Error);
    } finally {
      probing = false;
    }
  };
  const onFailure = (error: Error) => {
    readyClusters.delete(cluster);
    failed(error);
    if (!timer && !stopped) timer = setInterval(() => void probe(), CLUSTER_PROBE_MS).unref();
  };
  cluster.on('error', onFailure);
  cluster.on('node-error', onFailure);
  // Emitted by destroy() and close(): the cluster is not reopened after that.
  cluster.on('disconnect', () => {
    stopped = true;
    readyClusters.delete(cluster);
    if (timer) clearInterval(timer);
    timer = null;
  });
  void probe();
  return cluster;
}

/** Whether Redis is connected and answering (a cluster: its slots are known and every master answered). */
export function redisReady(redis: Redis): boolean {
  return isCluster(redis) ? readyClusters.has(redis) : redis.isReady;
}

/** PING: the server, or every master of a cluster (a cluster answers only when all of its slots do). */
export async function pingRedis(redis: Redis): Promise<void> {
  if (!isCluster(redis)) {
    await redis.ping();
    return;
  }
  if (!redis.isOpen || redis.masters.length === 0) throw new Error('Redis Cluster slots not known yet');
  await Promise.all(redis.masters.map(async (master) => (await redis.nodeClient(master)).ping()));
}

/**
 * Resolves once a cluster's slot map is known (a single client needs nothing: its offline queue,
 * or its failing fast, already says what a command issued before the connection does); rejects
 * after REDIS_TIMEOUT_MS. A cluster command issued before then would fail with a TypeError.
 */
export async function redisConnected(redis: Redis): Promise<void> {
  const deadline = Date.now() + REDIS_TIMEOUT_MS;
  while (isCluster(redis) && redis.masters.length === 0) {
    if (Date.now() > deadline) throw new Error('Redis Cluster slots not known yet');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A command as node-redis sends it, raw reply and all, to the node holding `key` (`args` names it). */
export function sendRaw<T>(redis: Redis, key: string, args: string[]): Promise<T> {
  return (isCluster(redis) ? redis.sendCommand(key, false, args) : redis.sendCommand(args)) as Promise<T>;
}

/**
 * Rejects with a DeadlineError when `command` has no answer within REDIS_TIMEOUT_MS. node-redis's
 * own `timeout` command option stops counting once the command is written, so a Redis that keeps
 * the connection open without answering (stopped, overloaded, packets dropped) would hold an
 * operator request until the operating system gives up on the connection.
 */
export function redisDeadline<T>(command: Promise<T>): Promise<T> {
  return withDeadline(command, REDIS_TIMEOUT_MS, 'Redis');
}

@Global()
@Module({
  providers: [{ provide: REDIS, inject: [APP_CONFIG], useFactory: (config: AppConfig) => createRedis(config) }],
  exports: [REDIS],
})
export class RedisModule implements OnApplicationShutdown {
  constructor(@Inject(REDIS) private readonly redis: Redis | null) {}

  onApplicationShutdown(): void {
    this.redis?.destroy();
  }
}
