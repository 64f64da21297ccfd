import { Global, Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';
import { WorkspaceAccess } from 'src/common/access/workspace-access.service';
import { AuthGuard } from 'src/common/auth/auth.guard';
import { SessionVerifier } from 'src/common/auth/session-verifier';
import { ApiExceptionFilter } from 'src/common/http/exception.filter';
import { ApiValidationPipe } from 'src/common/http/validation.pipe';
import { MetricsService } from 'src/common/metrics/metrics.service';

/** The request pipeline every route goes through, registered here so a test app behaves like production. */
@Global()
@Module({
  providers: [
    SessionVerifier,
    MetricsService,
    WorkspaceAccess,
    { provide: APP_GUARD, useClass: AuthGuard },
    { provide: APP_PIPE, useClass: ApiValidationPipe },
    { provide: APP_FILTER, useClass: ApiExceptionFilter },
  ],
  exports: [WorkspaceAccess, MetricsService],
})
export class CommonModule {}
