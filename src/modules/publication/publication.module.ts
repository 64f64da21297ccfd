import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { PUBLICATION_ENTITIES } from 'src/modules/publication/entities';
import { HotPath } from 'src/modules/publication/hot-path';
import { PublicationController } from 'src/modules/publication/publication.controller';
import { PublicationJob } from 'src/modules/publication/publication.job';
import { PublicationService } from 'src/modules/publication/publication.service';
import { SnapshotDocuments } from 'src/modules/publication/snapshot-documents.service';
import { SnapshotHistoryService } from 'src/modules/publication/snapshot-history.service';
import { SnapshotInstancesRepository } from 'src/modules/publication/snapshot-instances.repository';
import { SnapshotVersionsRepository } from 'src/modules/publication/snapshot-versions.repository';
import { SnapshotRegistry } from 'src/modules/publication/snapshot.registry';

/** Snapshot staging, building and publication, and the version history; the workspace counters through the platform's WorkspacesRepository. */
@Module({
  imports: [TypeOrmModule.forFeature(PUBLICATION_ENTITIES)],
  controllers: [PublicationController],
  providers: [
    SnapshotVersionsRepository,
    SnapshotInstancesRepository,
    HotPath,
    SnapshotRegistry,
    SnapshotDocuments,
    PublicationService,
    PublicationJob,
    SnapshotHistoryService,
  ],
  exports: [HotPath, SnapshotRegistry, PublicationService, SnapshotHistoryService],
})
export class PublicationModule {}
