import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { declaredAccess } from 'src/platform/access/decorators';
import { ServiceTokenAuthGuard } from 'src/platform/auth/service-token-auth.guard';
import { SessionAuthGuard } from 'src/platform/auth/session-auth.guard';
import { recordRouteTemplate, routeTemplate } from 'src/common/http/route-template';
import { requestOf } from 'src/common/http/request-of';

/**
 * The first global guard. Every handler declares how it is reached (deny by default, a 500
 * without a declaration): public (no credential), internal (the gateway's service JWT) or an
 * operator session, for `@Authenticated()` and every workspace action alike. The membership,
 * role and frozen-workspace guards run after it.
 */
@Injectable()
export class AuthenticationGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly sessions: SessionAuthGuard,
    private readonly serviceTokens: ServiceTokenAuthGuard,
  ) {}

  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    const access = declaredAccess(this.reflector, context);
    recordRouteTemplate(requestOf<object>(context), routeTemplate(context.getClass(), context.getHandler()));
    switch (access.kind) {
      case 'public':
        return true;
      case 'internal':
        return this.serviceTokens.canActivate(context);
      case 'session':
      case 'workspace':
        return this.sessions.canActivate(context);
    }
  }
}
