import { Module } from '@nestjs/common';
import { UsageController } from 'src/modules/usage/usage.controller';
import { UsageService } from 'src/modules/usage/usage.service';

/** Usage read model: projected from `{prefix}:usage` into raw events and hourly rollups. */
@Module({ controllers: [UsageController], providers: [UsageService] })
export class UsageModule {}
