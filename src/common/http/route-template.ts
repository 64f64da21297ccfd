import { Type } from '@nestjs/common';
import { PATH_METADATA } from '@nestjs/common/constants';

/** The path template of a handler, e.g. `/api/v1/workspaces/:ws/keys`: what logs and metrics name a route by. */
export function routeTemplate(controller: Type, handler: object): string {
  const parts = [Reflect.getMetadata(PATH_METADATA, controller), Reflect.getMetadata(PATH_METADATA, handler)].map((p) => String(p ?? ''));
  return `/${parts.filter((p) => p && p !== '/').join('/')}`.replace(/\/+/g, '/');
}

/** Records the template on the underlying HTTP request, where the access log reads it (adapter-neutral). */
export function recordRouteTemplate(request: object, template: string): void {
  const raw = (request as { raw?: object }).raw ?? request;
  (raw as { routeTemplate?: string }).routeTemplate = template;
}
