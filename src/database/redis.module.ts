import { Global, Inject, Logger, Module, OnApplicationShutdown } from '@nestjs/common';
import Redis from 'ioredis';
import { APP_CONFIG, AppConfig } from 'src/config/config';
import { errorFields } from 'src/common/logging/error-fields';

/** The Redis client, or null when REDIS_URL is unset (in-process hot path, no streams). */
export const REDIS = Symbol('REDIS');

/**
 * Commands fail fast while Redis is unreachable (no offline queue, one retry) so a Redis outage
 * never blocks an operator request; the client keeps reconnecting in the background.
 */
export function createRedis(url: string): Redis {
  const logger = new Logger('redis');
  const client = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
    commandTimeout: 2000,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
  });
  let down = false;
  client.on('error', (error: Error) => {
    if (!down) logger.warn({ msg: 'redis unavailable', ...errorFields(error) });
    down = true;
  });
  client.on('ready', () => {
    if (down) logger.log({ msg: 'redis available again' });
    down = false;
  });
  return client;
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
  constructor(@Inject(REDIS) private readonly redis: Redis | null) {}

  onApplicationShutdown(): void {
    this.redis?.disconnect();
  }
}
