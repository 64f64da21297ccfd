import { Global, Inject, Logger, Module, OnApplicationShutdown } from '@nestjs/common';
import { createClient, RedisClientType } from 'redis';
import { APP_CONFIG, AppConfig } from 'src/config/config';
import { withDeadline } from 'src/common/time/deadline';
import { errorFields } from 'src/common/logging/error-fields';

/** The Redis client (node-redis), or null when REDIS_URL is unset (in-process hot path, no streams). */
export const REDIS = Symbol('REDIS');

/** How long a connection attempt, and a command of the hot path, may take. */
export const REDIS_TIMEOUT_MS = 2000;

/**
 * Commands fail fast while Redis is unreachable: no offline queue (a command issued while the
 * client is not connected is rejected at once with ClientOfflineError), 2 s connect timeout, and
 * the client keeps reconnecting in the background. A command in flight when the connection drops
 * is rejected, not retried. The connection is opened in the background, never awaited, so a
 * process starts while Redis is down. One log line marks the start of an outage, one its end.
 */
export function createRedis(url: string): RedisClientType {
  const client: RedisClientType = createClient({
    url,
    disableOfflineQueue: true,
    socket: { connectTimeout: REDIS_TIMEOUT_MS, reconnectStrategy: (attempt) => Math.min((attempt + 1) * 200, 2000) },
  });
  const logger = new Logger('redis');
  let down = false;
  // node-redis emits 'error' for every failed attempt; an unhandled one would crash the process.
  client.on('error', (error: Error) => {
    if (!down) logger.warn({ msg: 'redis unavailable', ...errorFields(error) });
    down = true;
  });
  client.on('ready', () => {
    if (down) logger.log({ msg: 'redis available again' });
    down = false;
  });
  // Settles only once connected (the strategy never gives up); failures reach 'error' above.
  client.connect().catch(() => undefined);
  return client;
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
  providers: [
    {
      provide: REDIS,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => (config.redisUrl ? createRedis(config.redisUrl) : null),
    },
  ],
  exports: [REDIS],
})
export class RedisModule implements OnApplicationShutdown {
  constructor(@Inject(REDIS) private readonly redis: RedisClientType | null) {}

  onApplicationShutdown(): void {
    this.redis?.destroy();
  }
}
