import { Module } from '@nestjs/common';
import { StreamsService } from 'src/modules/streams/streams.service';
import { TypeOrmModule } from '@nestjs/typeorm';
import { STREAMS_ENTITIES } from 'src/modules/streams/entities';
import { WorkspacesModule } from 'src/modules/workspaces/workspaces.module';

/** The gateway stream consumer and read-model maintenance shared by receipts and usage. */
@Module({ imports: [TypeOrmModule.forFeature(STREAMS_ENTITIES), WorkspacesModule], providers: [StreamsService], exports: [StreamsService] })
export class StreamsModule {}
