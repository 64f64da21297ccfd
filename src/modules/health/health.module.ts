import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { HealthController } from 'src/modules/health/health.controller';
import { ReadinessService } from 'src/modules/health/readiness.service';
import { DatabaseProbeRepository } from 'src/modules/health/database-probe.repository';
import { StreamsModule } from 'src/modules/streams/streams.module';

/** Liveness (`/healthz`) and readiness (`/readyz`, through terminus). */
@Module({
  // Terminus logs nothing: a failing probe repeats every few seconds and its answer already names
  // what is down.
  imports: [TerminusModule.forRoot({ logger: false }), StreamsModule],
  controllers: [HealthController],
  providers: [DatabaseProbeRepository, ReadinessService],
})
export class HealthModule {}
