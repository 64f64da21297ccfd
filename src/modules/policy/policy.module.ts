import { NotificationsModule } from 'src/modules/notifications/notifications.module';
import { Module } from '@nestjs/common';
import { AuditModule } from 'src/modules/audit/audit.module';
import { PublicationModule } from 'src/modules/publication/publication.module';
import { WorkspacesModule } from 'src/modules/workspaces/workspaces.module';
import { MetricsService } from 'src/platform/metrics/metrics.service';
import { APP_CONFIG, AppConfig } from 'src/config/config';
import { PolicyCompiler } from 'src/modules/policy/policy.compiler';
import { PolicyController } from 'src/modules/policy/policy.controller';
import { PolicyService } from 'src/modules/policy/policy.service';
import { PolicyReplayService } from 'src/modules/policy/policy-replay.service';
import { PolicyExplainService } from 'src/modules/policy/policy-explain.service';
import { PolicyDiffService } from 'src/modules/policy/policy-diff.service';
import { PolicySides } from 'src/modules/policy/policy-sides';
import { PoliciesRepository } from 'src/modules/policy/policies.repository';
import { ReceiptsModule } from 'src/modules/receipts/receipts.module';
import { TypeOrmModule } from '@nestjs/typeorm';
import { POLICY_ENTITIES } from 'src/modules/policy/entities';

@Module({
  imports: [TypeOrmModule.forFeature(POLICY_ENTITIES), AuditModule, NotificationsModule, PublicationModule, ReceiptsModule, WorkspacesModule],
  controllers: [PolicyController],
  providers: [
    PolicyService,
    PolicyReplayService,
    PolicyExplainService,
    PolicyDiffService,
    PolicySides,
    PoliciesRepository,
    {
      provide: PolicyCompiler,
      useFactory: (config: AppConfig, metrics: MetricsService) => new PolicyCompiler(config.policyCompilerConcurrency, config.policyCompileTimeoutMs, metrics),
      inject: [APP_CONFIG, MetricsService],
    },
  ],
  // PolicyService: the demo seeder publishes a policy through it.
  exports: [PolicyService],
})
export class PolicyModule {}
