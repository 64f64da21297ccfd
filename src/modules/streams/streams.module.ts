import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { STREAMS_ENTITIES } from 'src/modules/streams/entities';
import { EntryParking } from 'src/modules/streams/entry-parking';
import { ParkedStreamEntriesRepository } from 'src/modules/streams/parked-stream-entries.repository';
import { ReadModelMaintenance } from 'src/modules/streams/read-model-maintenance';
import { ReadModelPartitions } from 'src/modules/streams/read-model-partitions';
import { ReadModelPartitionsRepository } from 'src/modules/streams/read-model-partitions.repository';
import { ShardedProjection } from 'src/modules/streams/sharded-projection';
import { StreamReader } from 'src/modules/streams/stream-reader';
import { StreamsJob } from 'src/modules/streams/streams.job';
import { StreamsService } from 'src/modules/streams/streams.service';
import { WorkspacesModule } from 'src/modules/workspaces/workspaces.module';

/** The gateway stream consumer and read-model maintenance shared by receipts and usage. */
@Module({
  imports: [TypeOrmModule.forFeature(STREAMS_ENTITIES), WorkspacesModule],
  providers: [
    ParkedStreamEntriesRepository,
    ReadModelPartitionsRepository,
    ReadModelPartitions,
    StreamReader,
    EntryParking,
    ShardedProjection,
    ReadModelMaintenance,
    StreamsService,
    StreamsJob,
  ],
  exports: [StreamsService],
})
export class StreamsModule {}
