import { CanActivate, ExecutionContext, Inject, Injectable, InternalServerErrorException } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { decodeJwt } from 'jose';
import { Access, ACCESS_KEY } from 'src/common/access/decorators';
import { GuardedRequest, OperatorContext } from 'src/common/access/context';
import { WorkspaceAccess } from 'src/common/access/workspace-access.service';
import { Identity, SessionVerifier } from 'src/common/auth/session-verifier';
import { verifyServiceToken } from 'src/common/auth/service-token';
import { VerifiedTokens } from 'src/common/auth/verified-tokens';
import { ApiError } from 'src/common/http/errors';
import { recordRouteTemplate, routeTemplate } from 'src/common/http/route-template';
import { APP_CONFIG, AppConfig } from 'src/config/config';

/** Maps verified session claims to control's own user (created on first sight). */
export interface OperatorResolver {
  resolve(identity: Identity): Promise<OperatorContext>;
}
export const OPERATOR_RESOLVER = Symbol('OPERATOR_RESOLVER');

const BEARER = /^bearer[ \t]+(\S+)[ \t]*$/i;
/** Verified service tokens remembered at once (the gateway reuses one token for many calls). */

/** The credential of a `Bearer` authorization header, or null for a missing header or another scheme. */
function bearer(header: unknown): string | null {
  if (typeof header !== 'string') return null;
  const match = BEARER.exec(header);
  return match ? match[1] : null;
}

/**
 * The one global guard. Every handler declares how it is reached (deny by default): public,
 * internal (service JWT), session, or a workspace action (session + membership, role, frozen).
 */
@Injectable()
export class AuthGuard implements CanActivate {
  /** Service tokens that passed verification: the gateway's hot path skips re-verifying them. */
  private readonly serviceTokens = new VerifiedTokens<true>();
  /** Session tokens that passed verification, with the operator they resolved to. */
  private readonly sessionTokens = new VerifiedTokens<OperatorContext>();

  constructor(
    private readonly reflector: Reflector,
    private readonly sessions: SessionVerifier,
    private readonly access: WorkspaceAccess,
    @Inject(OPERATOR_RESOLVER) private readonly operators: OperatorResolver,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const access = this.reflector.getAllAndOverride<Access | undefined>(ACCESS_KEY, [context.getHandler(), context.getClass()]);
    if (!access) throw new InternalServerErrorException();
    const request = context.switchToHttp().getRequest<GuardedRequest & { headers: Record<string, unknown> }>();
    recordRouteTemplate(request, routeTemplate(context.getClass(), context.getHandler()));
    switch (access.kind) {
      case 'public':
        return true;
      case 'internal':
        await this.checkServiceToken(request.headers.authorization);
        return true;
      case 'session':
        request.operator = await this.checkSession(request.headers.authorization);
        return true;
      case 'workspace':
        request.operator = await this.checkSession(request.headers.authorization);
        request.workspace = await this.access.authorize(request.params.ws, request.operator, access.action);
        return true;
    }
  }

  private async checkSession(header: unknown): Promise<OperatorContext> {
    if (!this.sessions.configured) throw new ApiError(503, 'dashboard identity is not configured');
    const token = bearer(header);
    if (!token) throw new ApiError(401, 'session required');
    const known = this.sessionTokens.get(token);
    if (known) return known;
    const claims = await this.sessions.verify(token);
    if (!claims) throw new ApiError(401, 'session not accepted');
    const operator = await this.operators.resolve(claims);
    this.sessionTokens.set(token, operator, claims.acceptedUntil);
    return operator;
  }

  private async checkServiceToken(header: unknown): Promise<void> {
    const secret = this.config.serviceJwtSecret;
    if (!secret) throw new ApiError(503, 'service authentication is not configured');
    const token = bearer(header);
    if (!token) throw new ApiError(401, 'service token not accepted');
    if (this.serviceTokens.get(token)) return;
    const previous = this.config.serviceJwtPreviousSecret;
    const accepted =
      (await verifyServiceToken(token, secret, 'gateway', 'control')) || (previous !== undefined && (await verifyServiceToken(token, previous, 'gateway', 'control')));
    if (!accepted) throw new ApiError(401, 'service token not accepted');
    this.serviceTokens.set(token, true, (decodeJwt(token).exp as number) * 1000);
  }
}
