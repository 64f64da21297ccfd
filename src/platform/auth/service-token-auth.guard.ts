import { ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { AuthGuard } from '@nestjs/passport';
import { bearerOf } from 'src/platform/auth/bearer';
import { ServiceTokenStrategy } from 'src/platform/auth/service-token.strategy';
import { VerifiedTokens } from 'src/platform/auth/verified-tokens';
import { ApiError } from 'src/common/http/errors';
import { APP_CONFIG, AppConfig } from 'src/config/config';
import { requestOf } from 'src/common/http/request-of';

type Request = { headers: Record<string, unknown> };

/**
 * Passport's guard for the gateway's service JWT: tries the current secret, then the previous
 * one; answers 503 when SERVICE_JWT_SECRET is unset and 401 `service token not accepted` for
 * anything else. A token verified once is remembered until its own `exp` (the secrets do not
 * change while the process runs), so the gateway's reused token skips re-verification.
 */
@Injectable()
export class ServiceTokenAuthGuard extends AuthGuard() {
  private readonly remembered = new VerifiedTokens<true>();

  constructor(
    strategy: ServiceTokenStrategy,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    super({ defaultStrategy: strategy.names });
  }

  override async canActivate(context: ExecutionContext): Promise<boolean> {
    if (!this.config.serviceJwtSecret) throw new ApiError(503, 'service authentication is not configured');
    const token = bearerOf(requestOf<Request>(context));
    if (!token) throw new ApiError(401, 'service token not accepted');
    if (this.remembered.get(token)) return true;
    return (await super.canActivate(context)) as boolean;
  }

  override handleRequest<T = true>(error: unknown, expiresAt: number | false, _info: unknown, context: ExecutionContext): T {
    if (error) throw error;
    if (!expiresAt) throw new ApiError(401, 'service token not accepted');
    this.remembered.set(bearerOf(requestOf<Request>(context))!, true, expiresAt);
    return true as T;
  }
}
