import { Global, Module } from '@nestjs/common';
import { OPERATOR_RESOLVER } from 'src/platform/auth/session.strategy';
import { DevIdentity } from 'src/modules/identity/dev-identity';
import { DevIdentityController } from 'src/modules/identity/dev-identity.controller';
import { IdentityService } from 'src/modules/identity/identity.service';
import { TypeOrmModule } from '@nestjs/typeorm';
import { IDENTITY_ENTITIES } from 'src/modules/identity/entities';

/**
 * Global for one provider only: the authentication guard (src/common, registered by PlatformModule
 * for every route) resolves operators through OPERATOR_RESOLVER, and common imports no domain.
 */
@Global()
@Module({
  imports: [TypeOrmModule.forFeature(IDENTITY_ENTITIES)],
  controllers: [DevIdentityController],
  providers: [IdentityService, DevIdentity, { provide: OPERATOR_RESOLVER, useExisting: IdentityService }],
  exports: [OPERATOR_RESOLVER],
})
export class IdentityModule {}
