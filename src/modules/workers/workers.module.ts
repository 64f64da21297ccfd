import { Module } from '@nestjs/common';
import { CatalogModule } from 'src/modules/catalog/catalog.module';
import { ConnectionsModule } from 'src/modules/connections/connections.module';
import { KeysModule } from 'src/modules/keys/keys.module';
import { WorkspacesModule } from 'src/modules/workspaces/workspaces.module';
import { DraftsService } from 'src/modules/workers/definitions/drafts.service';
import { EntitlementsService } from 'src/modules/workers/reference/entitlements.service';
import { OrchestratorClient } from 'src/modules/workers/orchestrator.client';
import { PresetsService } from 'src/modules/workers/reference/presets.service';
import { RunsController } from 'src/modules/workers/runs/runs.controller';
import { RunsService } from 'src/modules/workers/runs/runs.service';
import { SessionProfilesService } from 'src/modules/workers/runs/session-profiles.service';
import { ReferenceController } from 'src/modules/workers/reference/reference.controller';
import { ReferenceService } from 'src/modules/workers/reference/reference.service';
import { WorkersController } from 'src/modules/workers/definitions/workers.controller';
import { WorkersService } from 'src/modules/workers/definitions/workers.service';
import { WorkflowsController } from 'src/modules/workers/definitions/workflows.controller';
import { WorkflowsService } from 'src/modules/workers/definitions/workflows.service';
import { TypeOrmModule } from '@nestjs/typeorm';
import { WORKERS_ENTITIES } from 'src/modules/workers/entities';

@Module({
  imports: [TypeOrmModule.forFeature(WORKERS_ENTITIES), CatalogModule, ConnectionsModule, KeysModule, WorkspacesModule],
  controllers: [ReferenceController, WorkersController, WorkflowsController, RunsController],
  providers: [ReferenceService, WorkersService, DraftsService, WorkflowsService, RunsService, SessionProfilesService, EntitlementsService, PresetsService, OrchestratorClient],
})
export class WorkersModule {}
