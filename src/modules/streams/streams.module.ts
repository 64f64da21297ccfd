import { Module } from '@nestjs/common';
import { StreamsService } from 'src/modules/streams/streams.service';

/** The gateway stream consumer and read-model maintenance shared by receipts and usage. */
@Module({ providers: [StreamsService], exports: [StreamsService] })
export class StreamsModule {}
