import { Module } from '@nestjs/common';
import { InternalController } from 'src/modules/internal/internal.controller';
import { KeysModule } from 'src/modules/keys/keys.module';

@Module({ imports: [KeysModule], controllers: [InternalController] })
export class InternalModule {}
