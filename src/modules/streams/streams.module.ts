import { Module } from '@nestjs/common';
import { StreamsService } from 'src/modules/streams/streams.service';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ParkedStreamEntry } from 'src/modules/streams/entities/parked-stream-entry.entity';
import { WorkspacesModule } from 'src/modules/workspaces/workspaces.module';

/** The gateway stream consumer and read-model maintenance shared by receipts and usage. */
@Module({ imports: [TypeOrmModule.forFeature([ParkedStreamEntry]), WorkspacesModule], providers: [StreamsService], exports: [StreamsService] })
export class StreamsModule {}
