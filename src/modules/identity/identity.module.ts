import { Global, Module } from '@nestjs/common';
import { OPERATOR_RESOLVER } from 'src/platform/auth/session.strategy';
import { DevIdentity } from 'src/modules/identity/dev-identity';
import { DevIdentityController } from 'src/modules/identity/dev-identity.controller';
import { IdentityService } from 'src/modules/identity/identity.service';
import { TypeOrmModule } from '@nestjs/typeorm';
import { IDENTITY_ENTITIES } from 'src/modules/identity/entities';
import { UsersRepository } from 'src/modules/identity/users.repository';

/**
 * Global for the authentication guard (src/platform, registered by PlatformModule for every route),
 * which resolves operators through OPERATOR_RESOLVER; platform imports no domain. `UsersRepository`
 * (and `IdentityService`, for the demo seeder's sign-in) are exported for the modules that read users
 * (workspaces, demo), which import this module by name.
 */
@Global()
@Module({
  imports: [TypeOrmModule.forFeature(IDENTITY_ENTITIES)],
  controllers: [DevIdentityController],
  providers: [UsersRepository, IdentityService, DevIdentity, { provide: OPERATOR_RESOLVER, useExisting: IdentityService }],
  exports: [OPERATOR_RESOLVER, IdentityService, UsersRepository],
})
export class IdentityModule {}
