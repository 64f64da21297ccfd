import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ControlSigning } from 'src/common/signing/control-signing.service';
import { ControlSigningKey } from 'src/common/signing/control-signing-key.entity';
import { ControlSigningPublicKey } from 'src/common/signing/control-signing-public-key.entity';
import { SigningKeysController } from 'src/common/signing/signing-keys.controller';

/** Control's signing key (one service, every module that signs uses it) and its public JWKS routes (live and retired). */
@Global()
@Module({ imports: [TypeOrmModule.forFeature([ControlSigningKey, ControlSigningPublicKey])], controllers: [SigningKeysController], providers: [ControlSigning], exports: [ControlSigning] })
export class SigningModule {}
