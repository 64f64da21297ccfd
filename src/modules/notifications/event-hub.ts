import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { EventEmitter } from 'node:events';
import type { RedisClientType } from 'redis';
import { errorFields } from 'src/common/logging/error-fields';
import { withDeadline } from 'src/common/time/deadline';
import { APP_CONFIG, AppConfig } from 'src/config/config';
import { REDIS, REDIS_TIMEOUT_MS } from 'src/database/redis.module';

/** A committed message as the event streams receive it. */
export interface HubMessage {
  workspace_id: string;
  id: string;
  type: string;
  body: string;
}

/**
 * Carries committed messages to the event streams of every replica: Redis pub/sub when Redis is
 * configured (each process subscribes once on its own connection), in-process otherwise (the
 * embedded default is a single process).
 */
@Injectable()
export class EventHub implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('notifications');
  private readonly local = new EventEmitter().setMaxListeners(0);
  private subscriber: RedisClientType | null = null;
  private readonly channel: string;

  constructor(
    @Inject(REDIS) private readonly redis: RedisClientType | null,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.channel = `${config.redisPrefix}:notifications`;
  }

  async onModuleInit(): Promise<void> {
    if (!this.redis) return;
    const subscriber = this.redis.duplicate();
    this.subscriber = subscriber;
    subscriber.on('error', () => undefined); // the main client logs outages
    // node-redis subscribes again by itself after a reconnect.
    const ready = subscriber.connect().then(() => subscriber.subscribe(this.channel, (text) => this.deliver(JSON.parse(text) as HubMessage)));
    await withDeadline(ready, REDIS_TIMEOUT_MS, 'Redis').catch((error: unknown) => this.logger.warn({ msg: 'event stream subscription pending', ...errorFields(error) }));
  }

  onApplicationShutdown(): void {
    this.subscriber?.destroy();
  }

  async publish(message: HubMessage): Promise<void> {
    if (!this.redis) return this.deliver(message);
    await withDeadline(this.redis.publish(this.channel, JSON.stringify(message)), REDIS_TIMEOUT_MS, 'Redis');
  }

  /** Calls `listener` with every message of the workspace until the returned function is called. */
  listen(workspaceId: string, listener: (m: HubMessage) => void): () => void {
    this.local.on(workspaceId, listener);
    return () => this.local.off(workspaceId, listener);
  }

  private deliver(message: HubMessage): void {
    this.local.emit(message.workspace_id, message);
  }
}
