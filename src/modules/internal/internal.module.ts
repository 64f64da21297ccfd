import { Module } from '@nestjs/common';
import { PublicationModule } from 'src/modules/publication/publication.module';
import { InternalController } from 'src/modules/internal/internal.controller';
import { KeysModule } from 'src/modules/keys/keys.module';

@Module({ imports: [KeysModule, PublicationModule], controllers: [InternalController] })
export class InternalModule {}
