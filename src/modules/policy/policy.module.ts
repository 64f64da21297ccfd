import { Module } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from 'src/config/config';
import { PolicyCompiler } from 'src/modules/policy/policy.compiler';
import { PolicyController } from 'src/modules/policy/policy.controller';
import { PolicyService } from 'src/modules/policy/policy.service';

@Module({
  controllers: [PolicyController],
  providers: [
    PolicyService,
    { provide: PolicyCompiler, useFactory: (config: AppConfig) => new PolicyCompiler(config.policyCompilerConcurrency), inject: [APP_CONFIG] },
  ],
})
export class PolicyModule {}
