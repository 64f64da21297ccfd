import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { CatalogModule } from 'src/modules/catalog/catalog.module';
import { ConnectionsModule } from 'src/modules/connections/connections.module';
import { KeysModule } from 'src/modules/keys/keys.module';
import { WorkspacesModule } from 'src/modules/workspaces/workspaces.module';
import { DraftsService } from 'src/modules/workers/definitions/drafts.service';
import { WorkersController } from 'src/modules/workers/definitions/workers.controller';
import { WorkersRepository } from 'src/modules/workers/definitions/workers.repository';
import { WorkersService } from 'src/modules/workers/definitions/workers.service';
import { WorkflowsController } from 'src/modules/workers/definitions/workflows.controller';
import { WorkflowsRepository } from 'src/modules/workers/definitions/workflows.repository';
import { WorkflowsService } from 'src/modules/workers/definitions/workflows.service';
import { WORKERS_ENTITIES } from 'src/modules/workers/entities';
import { OrchestratorClient } from 'src/modules/workers/orchestrator.client';
import { EntitlementsService } from 'src/modules/workers/reference/entitlements.service';
import { PresetsService } from 'src/modules/workers/reference/presets.service';
import { ReferenceController } from 'src/modules/workers/reference/reference.controller';
import { ReferenceService } from 'src/modules/workers/reference/reference.service';
import { WorkerPlansRepository } from 'src/modules/workers/reference/worker-plans.repository';
import { RunControlsService } from 'src/modules/workers/runs/run-controls.service';
import { RunsController } from 'src/modules/workers/runs/runs.controller';
import { RunsRepository } from 'src/modules/workers/runs/runs.repository';
import { RunsService } from 'src/modules/workers/runs/runs.service';
import { SessionProfilesRepository } from 'src/modules/workers/runs/session-profiles.repository';
import { SessionProfilesService } from 'src/modules/workers/runs/session-profiles.service';

/**
 * The Workers surface: reference/ (templates, environments, entitlements, presets, modes,
 * doctor), definitions/ (Workers and workflows on one revisioned lifecycle) and runs/ (runs,
 * their controls, session profiles). Nothing is exported: no other module reads these tables.
 */
@Module({
  imports: [TypeOrmModule.forFeature(WORKERS_ENTITIES), CatalogModule, ConnectionsModule, KeysModule, WorkspacesModule],
  controllers: [ReferenceController, WorkersController, WorkflowsController, RunsController],
  providers: [
    WorkerPlansRepository,
    WorkersRepository,
    WorkflowsRepository,
    RunsRepository,
    SessionProfilesRepository,
    ReferenceService,
    EntitlementsService,
    PresetsService,
    WorkersService,
    DraftsService,
    WorkflowsService,
    RunsService,
    RunControlsService,
    SessionProfilesService,
    OrchestratorClient,
  ],
})
export class WorkersModule {}
