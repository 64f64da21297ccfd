import { Global, Module } from '@nestjs/common';
import { OPERATOR_RESOLVER } from 'src/common/auth/session.strategy';
import { DevIdentity } from 'src/modules/identity/dev-identity';
import { DevIdentityController } from 'src/modules/identity/dev-identity.controller';
import { IdentityService } from 'src/modules/identity/identity.service';

@Global()
@Module({
  controllers: [DevIdentityController],
  providers: [IdentityService, DevIdentity, { provide: OPERATOR_RESOLVER, useExisting: IdentityService }],
  exports: [OPERATOR_RESOLVER, DevIdentity],
})
export class IdentityModule {}
