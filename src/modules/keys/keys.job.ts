import { Inject, Injectable, Logger, OnModuleInit, Optional } from '@nestjs/common';
import { Interval, SchedulerRegistry } from '@nestjs/schedule';
import { singleFlight } from 'src/common/async/single-flight';
import { errorFields } from 'src/common/logging/error-fields';
import { REDIS, Redis, redisReady } from 'src/database/redis.module';
import { KeySync } from 'src/modules/keys/key-sync.service';

export const KEY_SYNC_INTERVAL_MS = 2000;

/**
 * Retries hot-path writes and deletions that failed after commit (Redis down during a mint, a
 * rotation or a revoke) and removes digests whose removal is due, until they settle: every 2 s, and
 * at once when the Redis connection comes back (so pending revocations land without waiting for the
 * next tick). Safe on any number of replicas: each sync runs under the key's row lock.
 */
@Injectable()
export class KeysJob implements OnModuleInit {
  private readonly logger = new Logger('keys');
  /** A pass was asked for while one ran (Redis came back mid-pass): the running pass goes round once more. */
  private again = false;
  /** One pass; none while Redis is known to be down (nothing could settle, and its return starts one). */
  private readonly pass = singleFlight(
    async () => {
      do {
        this.again = false;
        if (this.redis && !redisReady(this.redis)) return;
        await this.sync.reconcile();
      } while (this.again);
    },
    (error) => this.logger.warn({ msg: 'key sync pass failed', ...errorFields(error) }),
  );

  constructor(
    private readonly sync: KeySync,
    @Inject(REDIS) private readonly redis: Redis | null,
    // Present only when the application runs its jobs (ScheduleModule): no pass is started otherwise.
    @Optional() @Inject(SchedulerRegistry) private readonly scheduler: SchedulerRegistry | null,
  ) {}

  onModuleInit(): void {
    if (this.scheduler && this.redis) this.redis.on('ready', () => this.redisBack());
  }

  /** Redis is reachable again: a pass now, or one more round of the pass running (it may have failed its first keys). */
  private redisBack(): void {
    this.again = true;
    void this.pass();
  }

  @Interval(KEY_SYNC_INTERVAL_MS)
  tick(): Promise<void> {
    return this.pass();
  }
}
