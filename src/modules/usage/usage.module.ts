import { NotificationsModule } from 'src/modules/notifications/notifications.module';
import { Module } from '@nestjs/common';
import { KeysModule } from 'src/modules/keys/keys.module';
import { StreamsModule } from 'src/modules/streams/streams.module';
import { UsageController } from 'src/modules/usage/usage.controller';
import { UsageService } from 'src/modules/usage/usage.service';
import { TypeOrmModule } from '@nestjs/typeorm';
import { USAGE_ENTITIES } from 'src/modules/usage/entities';

/** Usage read model: projected from `{prefix}:usage` into raw events, hourly and per-minute rollups. */
@Module({ imports: [TypeOrmModule.forFeature(USAGE_ENTITIES), KeysModule, NotificationsModule, StreamsModule], controllers: [UsageController], providers: [UsageService] })
export class UsageModule {}
