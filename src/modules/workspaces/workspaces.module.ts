import { Module } from '@nestjs/common';
import { AuditModule } from 'src/modules/audit/audit.module';
import { PublicationModule } from 'src/modules/publication/publication.module';
import { OverviewRegistry } from 'src/modules/workspaces/overview.registry';
import { WorkspacesController } from 'src/modules/workspaces/workspaces.controller';
import { WorkspacesService } from 'src/modules/workspaces/workspaces.service';
import { TypeOrmModule } from '@nestjs/typeorm';
import { OrganizationMember } from 'src/modules/workspaces/entities/organization-member.entity';
import { Organization } from 'src/modules/workspaces/entities/organization.entity';
import { WorkspaceMember } from 'src/modules/workspaces/entities/workspace-member.entity';
import { Workspace } from 'src/modules/workspaces/entities/workspace.entity';

@Module({
  imports: [TypeOrmModule.forFeature([OrganizationMember, Organization, WorkspaceMember, Workspace]), AuditModule, PublicationModule],
  controllers: [WorkspacesController],
  providers: [WorkspacesService, OverviewRegistry],
  exports: [WorkspacesService, OverviewRegistry],
})
export class WorkspacesModule {}
