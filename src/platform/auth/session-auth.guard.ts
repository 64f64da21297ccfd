import { ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { AuthGuard } from '@nestjs/passport';
import { GuardedRequest, OperatorContext } from 'src/platform/access/context';
import { bearerOf } from 'src/platform/auth/bearer';
import { SessionStrategy, VerifiedSession } from 'src/platform/auth/session.strategy';
import { VerifiedTokens } from 'src/platform/auth/verified-tokens';
import { ApiError } from 'src/common/http/errors';
import { APP_CONFIG, AppConfig } from 'src/config/config';
import { requestOf } from 'src/common/http/request-of';

type Request = GuardedRequest & { headers: Record<string, unknown> };

/**
 * Passport's guard for operator sessions: puts the verified operator on `request.operator`, or
 * answers 503 (no issuer configured), 401 `session required` (no bearer credential) or 401
 * `session not accepted` (any verification failure, one message for all). A token verified once
 * is remembered, with its operator, until `VerifiedSession.rememberedUntil`.
 */
@Injectable()
export class SessionAuthGuard extends AuthGuard() {
  private readonly remembered = new VerifiedTokens<OperatorContext>();

  constructor(
    strategy: SessionStrategy,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    super({ defaultStrategy: strategy.name, property: 'operator' });
  }

  /** Synchronous for a remembered token (the common case: no promise and no extra turn of the request). */
  override canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    if (!this.config.identityIssuer) throw new ApiError(503, 'dashboard identity is not configured');
    const request = requestOf<Request>(context);
    const token = bearerOf(request);
    if (!token) throw new ApiError(401, 'session required');
    const known = this.remembered.get(token);
    if (known) {
      request.operator = known;
      return true;
    }
    return super.canActivate(context) as Promise<boolean>;
  }

  override handleRequest<T = OperatorContext>(error: unknown, session: VerifiedSession | false, _info: unknown, context: ExecutionContext): T {
    if (error) throw error;
    if (!session) throw new ApiError(401, 'session not accepted');
    this.remembered.set(bearerOf(requestOf<Request>(context))!, session.operator, session.rememberedUntil);
    return session.operator as T;
  }
}
