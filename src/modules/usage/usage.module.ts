import { Module } from '@nestjs/common';
import { KeysModule } from 'src/modules/keys/keys.module';
import { StreamsModule } from 'src/modules/streams/streams.module';
import { UsageController } from 'src/modules/usage/usage.controller';
import { UsageService } from 'src/modules/usage/usage.service';

/** Usage read model: projected from `{prefix}:usage` into raw events and hourly rollups. */
@Module({ imports: [KeysModule, StreamsModule], controllers: [UsageController], providers: [UsageService] })
export class UsageModule {}
