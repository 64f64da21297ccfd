import { Global, Module } from '@nestjs/common';
import { OverviewRegistry } from 'src/modules/workspaces/overview.registry';
import { WorkspacesController } from 'src/modules/workspaces/workspaces.controller';
import { WorkspacesService } from 'src/modules/workspaces/workspaces.service';

@Global()
@Module({ controllers: [WorkspacesController], providers: [WorkspacesService, OverviewRegistry], exports: [WorkspacesService, OverviewRegistry] })
export class WorkspacesModule {}
