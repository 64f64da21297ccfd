import { CanActivate, ExecutionContext, Injectable, SetMetadata, Type } from '@nestjs/common';
import { ROUTE_ARGS_METADATA } from '@nestjs/common/constants';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum';
import { getMetadataStorage } from 'class-validator';
import { WORKSPACE_NOT_FOUND } from 'src/platform/access/workspace-access.service';
import { Answer, ANSWERS_KEY } from 'src/common/http/documented';
import { ApiError, FieldError, FieldValidationError } from 'src/common/http/errors';
import { routeTemplate } from 'src/common/http/route-template';
import { InputFault, inputFault, isStorableText, TOO_DEEP, UNSTORABLE_TEXT } from 'src/common/http/text';
import { requestOf } from 'src/common/http/request-of';

const OWN_FORMAT_KEY = 'input:own-path-format';

/**
 * Path parameters whose format this handler checks itself, before any store sees them, because the
 * specification gives the route its own refusal of a malformed one (`key hash must be sha256 hex`
 * 400, a `subscription_id` 422): the edge leaves them to it rather than answering its 404.
 */
export const ChecksOwnFormat = (...params: string[]) => SetMetadata(OWN_FORMAT_KEY, params);

/** What a handler reads of the request, from its parameter decorators. */
interface Reads {
  /** Path parameters, in path order, each with the 404 detail of an id that cannot exist. */
  params: [string, string][];
  /**
   * Query parameters the handler reads: named ones, the properties of a query DTO (the validation
   * pipe strips the others, so they are never read), or 'all' for a whole query without a DTO.
   */
  query: Set<string> | 'all';
  body: boolean;
}

const WORKSPACE_PARAMS = new Set(['ws', 'workspaceId']);

/**
 * The 404 detail of each path parameter that names something: `workspace not found` for the
 * workspace, else the handler's documented 404 messages (`@Answers(404, ...)`, backticked) in path
 * order, so a parameter that cannot exist is answered as the route answers an unknown id.
 */
function notFoundDetails(names: string[], handler: object): [string, string][] {
  const answers = (Reflect.getMetadata(ANSWERS_KEY, handler) as Answer[] | undefined) ?? [];
  const messages = answers
    .filter((a) => a.status === 404)
    .flatMap((a) => [...a.description.matchAll(/`([^`]+)`/g)].map((m) => m[1]))
    .filter((m) => m !== WORKSPACE_NOT_FOUND);
  let i = 0;
  return names.map((name) => [name, WORKSPACE_PARAMS.has(name) ? WORKSPACE_NOT_FOUND : (messages[Math.min(i++, messages.length - 1)] ?? 'Not Found')]);
}

/** The properties a DTO class declares to class-validator, or null for anything else. */
function dtoProperties(type: Function | undefined): string[] | null {
  if (!type || type === Object) return null;
  const names = getMetadataStorage().getTargetValidationMetadatas(type, '', true, false).map((m) => m.propertyName);
  return names.length > 0 ? [...new Set(names)] : null;
}

function readsOf(controller: Type, handler: object): Reads {
  const args = (Reflect.getMetadata(ROUTE_ARGS_METADATA, controller, (handler as { name: string }).name) as Record<string, { data?: unknown }> | undefined) ?? {};
  const reads: Reads = { params: [], query: new Set(), body: false };
  const types = (Reflect.getMetadata('design:paramtypes', controller.prototype, (handler as { name: string }).name) as Function[] | undefined) ?? [];
  // A handler taking the raw request (`@Req()`: the OAuth callback, whose only refusal is its 400) checks it itself.
  for (const [key, { data }] of Object.entries(args)) {
    const type = Number(key.split(':')[0]);
    if (type === RouteParamtypes.BODY || type === RouteParamtypes.RAW_BODY) reads.body = true;
    if (type !== RouteParamtypes.QUERY || reads.query === 'all') continue;
    const declared = typeof data === 'string' ? [data] : dtoProperties(types[Number(key.split(':')[1])]);
    if (declared) declared.forEach((name) => (reads.query as Set<string>).add(name));
    else reads.query = 'all';
  }
  const names = [...routeTemplate(controller, handler).matchAll(/:(\w+)/g)].map((m) => m[1]);
  const own = (Reflect.getMetadata(OWN_FORMAT_KEY, handler) as string[] | undefined) ?? [];
  reads.params = notFoundDetails(names, handler).filter(([name]) => !own.includes(name));
  return reads;
}

function refusal(loc: (string | number)[], fault: InputFault): FieldError {
  return fault.kind === 'text' ? { loc, msg: UNSTORABLE_TEXT, type: 'string_unicode' } : { loc, msg: TOO_DEEP, type: 'value_error' };
}

/**
 * Issue 17's rule, in one place: the last global guard (after authentication, membership 404, role
 * 403 and frozen 409, so those answers keep their order) refuses unstorable text in what the
 * handler reads: a path parameter is an id that cannot exist (404, as the route answers an unknown
 * one), a query parameter or body field a 422 naming it. A body nested past MAX_JSON_DEPTH is a
 * 422 too, so no recursive walk after this one can overflow the stack. The membership guard
 * applies the text test to `:ws` before its lookup (src/platform/access/workspace-access.service.ts).
 */
@Injectable()
export class InputTextGuard implements CanActivate {
  private readonly handlers = new WeakMap<object, Reads>();

  /** Whether the handler reads anything this guard checks (a path parameter, query parameter or body). */
  reads(controller: Type, handler: object): boolean {
    const reads = this.readsOf(controller, handler);
    return reads.params.length > 0 || reads.query === 'all' || reads.query.size > 0 || reads.body;
  }

  private readsOf(controller: Type, handler: object): Reads {
    let reads = this.handlers.get(handler);
    if (!reads) this.handlers.set(handler, (reads = readsOf(controller, handler)));
    return reads;
  }

  canActivate(context: ExecutionContext): boolean {
    const reads = this.readsOf(context.getClass(), context.getHandler());
    const request = requestOf<{ params?: Record<string, unknown>; query?: Record<string, unknown>; body?: unknown }>(context);
    for (const [name, detail] of reads.params) {
      const value = request.params?.[name];
      if (typeof value === 'string' && !isStorableText(value)) throw new ApiError(404, detail);
    }
    for (const [name, value] of Object.entries(request.query ?? {})) {
      if (reads.query !== 'all' && !reads.query.has(name)) continue;
      const fault = isStorableText(name) ? inputFault(value) : { loc: [], kind: 'text' as const };
      if (fault) throw new FieldValidationError([refusal(['query', name], fault)]);
    }
    if (reads.body) {
      const fault = inputFault(request.body);
      if (fault) throw new FieldValidationError([refusal(['body', ...fault.loc], fault)]);
    }
    return true;
  }
}
