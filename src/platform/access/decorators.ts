import { applyDecorators, Controller, ExecutionContext, InternalServerErrorException, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { WorkspaceAction } from 'src/platform/access/actions';

export const ACCESS_KEY = 'access';

/** How a route is reached; every handler declares exactly one (deny by default). */
export type Access =
  | { kind: 'public' }
  | { kind: 'internal' }
  | { kind: 'session' }
  | { kind: 'workspace'; action: WorkspaceAction };

/** Open route: no credential. */
export const Public = () => SetMetadata(ACCESS_KEY, { kind: 'public' } satisfies Access);
/** Gateway route: service JWT only. */
export const Internal = () => SetMetadata(ACCESS_KEY, { kind: 'internal' } satisfies Access);

/** Where the gateway's routes live (CONTRACT.md section 4): the one spelling of the prefix. */
export const INTERNAL_PREFIX = 'internal/v1';

/** A controller of gateway routes: under `/internal/v1`, every handler service-JWT only. */
export const InternalRoutes = (path = '') => applyDecorators(Controller(path ? `${INTERNAL_PREFIX}/${path}` : INTERNAL_PREFIX), Internal());
/** Any verified operator session, no workspace. */
export const Authenticated = () => SetMetadata(ACCESS_KEY, { kind: 'session' } satisfies Access);
/** A verified session that is a member of `:ws` with a role granting `action` (and not frozen, unless a read). */
export const Action = (action: WorkspaceAction) => SetMetadata(ACCESS_KEY, { kind: 'workspace', action } satisfies Access);

/** The access a handler declares; a 500 when it declares none, so a forgotten declaration fails closed and loudly. */
export function declaredAccess(reflector: Reflector, context: ExecutionContext): Access {
  const access = reflector.getAllAndOverride<Access | undefined>(ACCESS_KEY, [context.getHandler(), context.getClass()]);
  if (!access) throw new InternalServerErrorException();
  return access;
}
