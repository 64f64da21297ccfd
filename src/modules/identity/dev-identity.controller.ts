import { Controller, Get, Inject } from '@nestjs/common';
import { Public } from 'src/platform/access/decorators';
import { ApiError } from 'src/common/http/errors';
import { APP_CONFIG, AppConfig } from 'src/config/config';
import { DevIdentity } from 'src/modules/identity/dev-identity';
import { Answers, Returns } from 'src/common/http/documented';
import { JWKS_SCHEMA } from 'src/modules/identity/identity.responses';

@Controller('dev-identity')
export class DevIdentityController {
  constructor(
    private readonly devIdentity: DevIdentity,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  @Get('.well-known/jwks.json')
  @Returns(JWKS_SCHEMA)
  @Public()
  @Answers(404, 'The development issuer is off (DEV_IDENTITY is not 1)')
  jwks() {
    if (!this.config.devIdentity) throw new ApiError(404, 'Not Found');
    return this.devIdentity.jwks();
  }
}
