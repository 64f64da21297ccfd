import { NotificationsModule } from 'src/modules/notifications/notifications.module';
import { Module } from '@nestjs/common';
import { AuditModule } from 'src/modules/audit/audit.module';
import { PublicationModule } from 'src/modules/publication/publication.module';
import { WorkspacesModule } from 'src/modules/workspaces/workspaces.module';
import { KeysController } from 'src/modules/keys/keys.controller';
import { KeysJob } from 'src/modules/keys/keys.job';
import { KeysService } from 'src/modules/keys/keys.service';
import { PendingRemovals } from 'src/modules/keys/pending-removals';
import { TypeOrmModule } from '@nestjs/typeorm';
import { KEYS_ENTITIES } from 'src/modules/keys/entities';
import { KeyExpiry } from 'src/modules/keys/key-expiry.service';
import { KeyExpiryJob } from 'src/modules/keys/key-expiry.job';
import { KeySync } from 'src/modules/keys/key-sync.service';
import { VirtualKeyRemovalsRepository } from 'src/modules/keys/virtual-key-removals.repository';
import { VirtualKeysRepository } from 'src/modules/keys/virtual-keys.repository';

/** The keys, the sync of their hot-path copies, and their expiry notifications. */
const KEYS_PROVIDERS = [VirtualKeysRepository, VirtualKeyRemovalsRepository, KeySync, KeyExpiry, KeyExpiryJob];

@Module({ imports: [TypeOrmModule.forFeature(KEYS_ENTITIES), AuditModule, NotificationsModule, PublicationModule, WorkspacesModule], controllers: [KeysController], providers: [KeysService, KeysJob, PendingRemovals, ...KEYS_PROVIDERS], exports: [KeysService] })
export class KeysModule {}
