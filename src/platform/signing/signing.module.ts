import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { SIGNING_ENTITIES } from 'src/platform/signing/entities';
import { ControlSigning } from 'src/platform/signing/control-signing.service';
import { SigningKeysController } from 'src/platform/signing/signing-keys.controller';
import { SigningKeysRepository } from 'src/platform/signing/signing-keys.repository';

/** Control's signing key (one service, every module that signs uses it) and its public JWKS routes (live and retired). */
@Global()
@Module({ imports: [TypeOrmModule.forFeature(SIGNING_ENTITIES)], controllers: [SigningKeysController], providers: [SigningKeysRepository, ControlSigning], exports: [ControlSigning] })
export class SigningModule {}
