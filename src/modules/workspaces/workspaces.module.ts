import { Module } from '@nestjs/common';
import { AuditModule } from 'src/modules/audit/audit.module';
import { IdentityModule } from 'src/modules/identity/identity.module';
import { PublicationModule } from 'src/modules/publication/publication.module';
import { OverviewRegistry } from 'src/modules/workspaces/overview.registry';
import { WorkspacesController } from 'src/modules/workspaces/workspaces.controller';
import { WorkspacesService } from 'src/modules/workspaces/workspaces.service';

/**
 * The workspace API. Its tables (organizations, workspaces and their members) are the platform's
 * (src/platform/tenancy, read by the access check of every request): it reaches them through the
 * repositories PlatformModule exports, and users through identity's.
 */
@Module({
  imports: [AuditModule, IdentityModule, PublicationModule],
  controllers: [WorkspacesController],
  providers: [WorkspacesService, OverviewRegistry],
  exports: [WorkspacesService, OverviewRegistry],
})
export class WorkspacesModule {}
