import { Inject, Injectable, Logger, OnModuleInit, Optional } from '@nestjs/common';
import { Interval, SchedulerRegistry } from '@nestjs/schedule';
import { REDIS, Redis, redisReady } from 'src/database/redis.module';
import { KeysService } from 'src/modules/keys/keys.service';
import { errorFields } from 'src/common/logging/error-fields';

export const KEY_SYNC_INTERVAL_MS = 2000;
export const KEY_EXPIRING_INTERVAL_MS = 60_000;

/**
 * Retries hot-path writes and deletions that failed after commit (Redis down during a mint, a
 * rotation or a revoke) and removes digests whose removal is due, until they settle: every 2 s, and
 * at once when the Redis connection comes back (so pending revocations land without waiting for the
 * next tick). Safe on any number of replicas: each sync runs under the key's row lock.
 */
@Injectable()
export class KeysJob implements OnModuleInit {
  private readonly logger = new Logger('keys');
  private running = false;
  /** A pass was asked for while one ran (Redis came back mid-pass): run another right after. */
  private again = false;

  constructor(
    private readonly keys: KeysService,
    @Inject(REDIS) private readonly redis: Redis | null,
    // Present only when the application runs its jobs (ScheduleModule): no pass is started otherwise.
    @Optional() @Inject(SchedulerRegistry) private readonly scheduler: SchedulerRegistry | null,
  ) {}

  onModuleInit(): void {
    if (this.scheduler && this.redis) this.redis.on('ready', () => this.redisBack());
  }

  /** Redis is reachable again: a pass now, or right after the one running (it may have failed its first keys). */
  private redisBack(): void {
    if (this.running) this.again = true;
    else void this.tick();
  }

  /** `key.expiring` for keys entering NOTIFY_KEY_EXPIRING_DAYS (exactly once, whatever the replicas). */
  @Interval(KEY_EXPIRING_INTERVAL_MS)
  async expiring(): Promise<void> {
    try {
      await this.keys.notifyExpiring();
    } catch (error) {
      this.logger.warn({ msg: 'key expiry notification pass failed', ...errorFields(error) });
    }
  }

  /** One pass; none while Redis is known to be down (nothing could settle, and its return starts one). */
  @Interval(KEY_SYNC_INTERVAL_MS)
  async tick(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      do {
        this.again = false;
        if (this.redis && !redisReady(this.redis)) return;
        await this.keys.reconcile();
      } while (this.again);
    } catch (error) {
      this.logger.warn({ msg: 'key sync pass failed', ...errorFields(error) });
    } finally {
      this.running = false;
    }
  }
}
