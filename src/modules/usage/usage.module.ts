import { NotificationsModule } from 'src/modules/notifications/notifications.module';
import { Module } from '@nestjs/common';
import { KeysModule } from 'src/modules/keys/keys.module';
import { StreamsModule } from 'src/modules/streams/streams.module';
import { BudgetThresholds } from 'src/modules/usage/budget-thresholds';
import { UsageController } from 'src/modules/usage/usage.controller';
import { UsageEventsRepository } from 'src/modules/usage/usage-events.repository';
import { UsageProjector } from 'src/modules/usage/usage.projector';
import { UsageRollupsRepository } from 'src/modules/usage/usage-rollups.repository';
import { UsageService } from 'src/modules/usage/usage.service';
import { TypeOrmModule } from '@nestjs/typeorm';
import { USAGE_ENTITIES } from 'src/modules/usage/entities';

/** Usage read model: projected from `{prefix}:usage` into raw events, hourly and per-minute rollups. */
@Module({
  imports: [TypeOrmModule.forFeature(USAGE_ENTITIES), KeysModule, NotificationsModule, StreamsModule],
  controllers: [UsageController],
  providers: [UsageEventsRepository, UsageRollupsRepository, UsageProjector, BudgetThresholds, UsageService],
})
export class UsageModule {}
