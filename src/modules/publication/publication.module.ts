import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { PUBLICATION_ENTITIES } from 'src/modules/publication/entities';
import { HotPath } from 'src/modules/publication/hot-path';
import { PublicationController } from 'src/modules/publication/publication.controller';
import { PublicationJob } from 'src/modules/publication/publication.job';
import { PublicationService } from 'src/modules/publication/publication.service';
import { SnapshotHistoryService } from 'src/modules/publication/snapshot-history.service';
import { SnapshotRegistry } from 'src/modules/publication/snapshot.registry';

@Module({
  imports: [TypeOrmModule.forFeature(PUBLICATION_ENTITIES)],
  controllers: [PublicationController],
  providers: [HotPath, SnapshotRegistry, PublicationService, PublicationJob, SnapshotHistoryService],
  exports: [HotPath, SnapshotRegistry, PublicationService, SnapshotHistoryService],
})
export class PublicationModule {}
