import { Module } from '@nestjs/common';
import { KeysController } from 'src/modules/keys/keys.controller';
import { KeysJob } from 'src/modules/keys/keys.job';
import { KeysService } from 'src/modules/keys/keys.service';

@Module({ controllers: [KeysController], providers: [KeysService, KeysJob], exports: [KeysService] })
export class KeysModule {}
