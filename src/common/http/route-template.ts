import { Type } from '@nestjs/common';
import { PATH_METADATA } from '@nestjs/common/constants';

/** Templates worked out so far, by controller and handler (the authentication guard asks on every request). */
const templates = new WeakMap<object, WeakMap<object, string>>();

/** The path template of a handler, e.g. `/api/v1/workspaces/:ws/keys`: what logs and metrics name a route by. */
export function routeTemplate(controller: Type, handler: object): string {
  let byHandler = templates.get(controller);
  let template = byHandler?.get(handler);
  if (template !== undefined) return template;
  const parts = [Reflect.getMetadata(PATH_METADATA, controller), Reflect.getMetadata(PATH_METADATA, handler)].map((p) => String(p ?? ''));
  template = `/${parts.filter((p) => p && p !== '/').join('/')}`.replace(/\/+/g, '/');
  if (!byHandler) templates.set(controller, (byHandler = new WeakMap()));
  byHandler.set(handler, template);
  return template;
}

/** Records the template on the underlying HTTP request, where the access log reads it (adapter-neutral). */
export function recordRouteTemplate(request: object, template: string): void {
  const raw = (request as { raw?: object }).raw ?? request;
  (raw as { routeTemplate?: string }).routeTemplate = template;
}
