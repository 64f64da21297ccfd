import { Module } from '@nestjs/common';
import { AuditModule } from 'src/modules/audit/audit.module';
import { PublicationModule } from 'src/modules/publication/publication.module';
import { OverviewRegistry } from 'src/modules/workspaces/overview.registry';
import { WorkspacesController } from 'src/modules/workspaces/workspaces.controller';
import { WorkspacesService } from 'src/modules/workspaces/workspaces.service';
import { TypeOrmModule } from '@nestjs/typeorm';
import { WORKSPACES_ENTITIES } from 'src/modules/workspaces/entities';

@Module({
  imports: [TypeOrmModule.forFeature(WORKSPACES_ENTITIES), AuditModule, PublicationModule],
  controllers: [WorkspacesController],
  providers: [WorkspacesService, OverviewRegistry],
  exports: [WorkspacesService, OverviewRegistry],
})
export class WorkspacesModule {}
