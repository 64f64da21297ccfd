import { Module } from '@nestjs/common';
import { HotPath } from 'src/modules/publication/hot-path';
import { PublicationJob } from 'src/modules/publication/publication.job';
import { PublicationService } from 'src/modules/publication/publication.service';
import { SnapshotRegistry } from 'src/modules/publication/snapshot.registry';

@Module({
  providers: [HotPath, SnapshotRegistry, PublicationService, PublicationJob],
  exports: [HotPath, SnapshotRegistry, PublicationService],
})
export class PublicationModule {}
