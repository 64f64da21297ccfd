import { Controller, Get, Res, ServiceUnavailableException } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { Public } from 'src/platform/access/decorators';
import { Answers, Returns } from 'src/common/http/documented';
import { HEALTH_SCHEMA, READINESS_FAILURE_SCHEMA, READINESS_SCHEMA } from 'src/modules/health/health.responses';
import { ReadinessService } from 'src/modules/health/readiness.service';

@Controller()
export class HealthController {
  constructor(
    private readonly terminus: HealthCheckService,
    private readonly readiness: ReadinessService,
    private readonly adapterHost: HttpAdapterHost,
  ) {}

  /** Liveness: the process serves requests. No I/O, so an outage elsewhere never restarts it. */
  @Get('healthz')
  @Returns(HEALTH_SCHEMA)
  @Public()
  health() {
    return { ok: true };
  }

  /** Readiness: PostgreSQL, migrations, and with REDIS_URL set, Redis and the stream backlog. */
  @Get('readyz')
  @HealthCheck({ noCache: true, swaggerDocumentation: false })
  @Returns(READINESS_SCHEMA)
  @Answers(503, 'not ready: `error` names each component that is down (`database`, `redis`, `migrations`, `streams`)', READINESS_FAILURE_SCHEMA)
  @Public()
  async ready(@Res({ passthrough: true }) res: unknown) {
    try {
      return await this.terminus.check(this.readiness.checks());
    } catch (error) {
      // Terminus answers "not ready" as an exception carrying its result; the body is that result
      // (the exception filter would answer a bare `{detail}`).
      if (!(error instanceof ServiceUnavailableException)) throw error;
      this.adapterHost.httpAdapter.status(res, 503);
      return error.getResponse();
    }
  }
}
