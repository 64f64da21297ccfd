import { Inject, Injectable } from '@nestjs/common';
import { HealthIndicatorFunction, HealthIndicatorService } from '@nestjs/terminus';
import { withDeadline } from 'src/common/time/deadline';
import { APP_CONFIG, AppConfig } from 'src/config/config';
import { pingRedis, REDIS, Redis } from 'src/database/redis.module';
import { StreamsService } from 'src/modules/streams/streams.service';
import { DatabaseProbeRepository } from 'src/modules/health/database-probe.repository';

/** Longest one check waits; a component slower than this is down (the checks run concurrently). */
export const CHECK_TIMEOUT_MS = 2000;

/** What a component that does not answer says: never the error's own message (it may quote a URL or input). */
const UNREACHABLE = 'unreachable';

/**
 * The components GET /readyz checks, as terminus indicators: PostgreSQL answers, every migration
 * the code knows is applied, and with Redis configured, Redis answers (every master of a cluster)
 * and no gateway stream has more than READY_STREAM_BACKLOG_MAX entries pending with the consumers.
 */
@Injectable()
export class ReadinessService {
  constructor(
    private readonly indicators: HealthIndicatorService,
    private readonly probe: DatabaseProbeRepository,
    @Inject(REDIS) private readonly redis: Redis | null,
    private readonly streams: StreamsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  checks(): HealthIndicatorFunction[] {
    const always = [() => this.database(), () => this.migrations()];
    return this.redis ? [...always, () => this.redisPing(), () => this.streamBacklog()] : always;
  }

  private async database() {
    const check = this.indicators.check('database');
    try {
      await withDeadline(this.probe.ping(), CHECK_TIMEOUT_MS, 'readiness check');
      return check.up();
    } catch {
      return check.down({ message: UNREACHABLE });
    }
  }

  private async migrations() {
    const check = this.indicators.check('migrations');
    try {
      const pending = await withDeadline(this.probe.migrationsPending(), CHECK_TIMEOUT_MS, 'readiness check');
      return pending ? check.down({ message: 'migrations pending' }) : check.up();
    } catch {
      return check.down({ message: UNREACHABLE });
    }
  }

  private async redisPing() {
    const check = this.indicators.check('redis');
    try {
      await withDeadline(pingRedis(this.redis!), CHECK_TIMEOUT_MS, 'readiness check');
      return check.up();
    } catch {
      return check.down({ message: UNREACHABLE });
    }
  }

  private async streamBacklog() {
    const check = this.indicators.check('streams');
    let pending: Partial<Record<string, number>>;
    try {
      pending = await withDeadline(this.streams.pendingBacklog(), CHECK_TIMEOUT_MS, 'readiness check');
    } catch {
      return check.down({ message: UNREACHABLE });
    }
    const over = Object.values(pending).some((count) => count! > this.config.readyStreamBacklogMax);
    return over ? check.down({ message: 'backlog over READY_STREAM_BACKLOG_MAX', pending }) : check.up({ pending });
  }
}
