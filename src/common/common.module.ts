import { Global, Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';
import { WorkspaceAccess } from 'src/common/access/workspace-access.service';
import { FrozenWorkspaceGuard } from 'src/common/access/frozen-workspace.guard';
import { MembershipGuard } from 'src/common/access/membership.guard';
import { RequestGuard } from 'src/common/access/request.guard';
import { RoleGuard } from 'src/common/access/role.guard';
import { AuthenticationGuard } from 'src/common/auth/authentication.guard';
import { IssuerKeys } from 'src/common/auth/issuer-keys';
import { ServiceTokenAuthGuard } from 'src/common/auth/service-token-auth.guard';
import { ServiceTokenStrategy } from 'src/common/auth/service-token.strategy';
import { SessionAuthGuard } from 'src/common/auth/session-auth.guard';
import { SessionStrategy } from 'src/common/auth/session.strategy';
import { ApiExceptionFilter } from 'src/common/http/exception.filter';
import { InputTextGuard } from 'src/common/http/input-text.guard';
import { ApiValidationPipe } from 'src/common/http/validation.pipe';
import { MetricsService } from 'src/common/metrics/metrics.service';

/** The request pipeline every route goes through, registered here so a test app behaves like production. */
@Global()
@Module({
  providers: [
    IssuerKeys,
    SessionStrategy,
    ServiceTokenStrategy,
    SessionAuthGuard,
    ServiceTokenAuthGuard,
    MetricsService,
    WorkspaceAccess,
    // One global guard runs, in this order, what a handler needs of: who is calling, then (workspace
    // routes) member 404, role 403, frozen 409, then text no store can take (an id that cannot exist
    // 404, a field 422). src/common/access/request.guard.ts.
    AuthenticationGuard,
    MembershipGuard,
    RoleGuard,
    FrozenWorkspaceGuard,
    InputTextGuard,
    { provide: APP_GUARD, useClass: RequestGuard },
    { provide: APP_PIPE, useClass: ApiValidationPipe },
    { provide: APP_FILTER, useClass: ApiExceptionFilter },
  ],
  exports: [WorkspaceAccess, MetricsService],
})
export class CommonModule {}
