import { Global, Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';
import { WorkspaceAccess } from 'src/platform/access/workspace-access.service';
import { FrozenWorkspaceGuard } from 'src/platform/access/frozen-workspace.guard';
import { MembershipGuard } from 'src/platform/access/membership.guard';
import { RequestGuard } from 'src/platform/access/request.guard';
import { RoleGuard } from 'src/platform/access/role.guard';
import { AuthenticationGuard } from 'src/platform/auth/authentication.guard';
import { IssuerKeys } from 'src/platform/auth/issuer-keys';
import { ServiceTokenAuthGuard } from 'src/platform/auth/service-token-auth.guard';
import { ServiceTokenStrategy } from 'src/platform/auth/service-token.strategy';
import { SessionAuthGuard } from 'src/platform/auth/session-auth.guard';
import { SessionStrategy } from 'src/platform/auth/session.strategy';
import { ApiExceptionFilter } from 'src/platform/http/exception.filter';
import { InputTextGuard } from 'src/platform/http/input-text.guard';
import { ApiValidationPipe } from 'src/common/http/validation.pipe';
import { MetricsService } from 'src/platform/metrics/metrics.service';
import { TypeOrmModule } from '@nestjs/typeorm';
import { TENANCY_ENTITIES } from 'src/platform/tenancy/entities';
import { MembershipsRepository } from 'src/platform/tenancy/memberships.repository';
import { WorkspaceAccessRepository } from 'src/platform/tenancy/workspace-access.repository';
import { WorkspacesRepository } from 'src/platform/tenancy/workspaces.repository';

/**
 * The request pipeline every route goes through, registered here so a test app behaves like
 * production, and the tenancy tables its access check reads on every request (organizations,
 * workspaces and their members: owned here, so that workspaces, publication and audit all reach
 * them through these repositories without importing one another).
 */
@Global()
@Module({
  imports: [TypeOrmModule.forFeature(TENANCY_ENTITIES)],
  providers: [
    WorkspaceAccessRepository,
    WorkspacesRepository,
    MembershipsRepository,
    IssuerKeys,
    SessionStrategy,
    ServiceTokenStrategy,
    SessionAuthGuard,
    ServiceTokenAuthGuard,
    MetricsService,
    WorkspaceAccess,
    // One global guard runs, in this order, what a handler needs of: who is calling, then (workspace
    // routes) member 404, role 403, frozen 409, then text no store can take (an id that cannot exist
    // 404, a field 422). src/platform/access/request.guard.ts.
    AuthenticationGuard,
    MembershipGuard,
    RoleGuard,
    FrozenWorkspaceGuard,
    InputTextGuard,
    { provide: APP_GUARD, useClass: RequestGuard },
    { provide: APP_PIPE, useClass: ApiValidationPipe },
    { provide: APP_FILTER, useClass: ApiExceptionFilter },
  ],
  exports: [WorkspaceAccess, MetricsService, WorkspacesRepository, MembershipsRepository],
})
export class PlatformModule {}
