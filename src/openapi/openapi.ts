import { INestApplication, RequestMethod, Type } from '@nestjs/common';
import { HTTP_CODE_METADATA, METHOD_METADATA, MODULE_METADATA, PATH_METADATA, REDIRECT_METADATA, ROUTE_ARGS_METADATA } from '@nestjs/common/constants';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { ReferenceObject, ResponseObject, SchemaObject } from '@nestjs/swagger/dist/interfaces/open-api-spec.interface';
import { DOMAIN_MODULES } from 'src/app.module';
import { ACTION_MIN_ROLE, FROZEN_ALLOWED } from 'src/platform/access/actions';
import { Access, ACCESS_KEY } from 'src/platform/access/decorators';
import { Schema } from 'src/common/http/document-schema';
import { Answer, ANSWERS_KEY, RETURNS_KEY, STREAMS_KEY } from 'src/common/http/documented';
import { isReadModelRoute } from 'src/common/http/errors';
import metadata from 'src/openapi/metadata';
import * as approvals from 'src/modules/approvals/approvals.responses';
import * as catalog from 'src/modules/connections/catalog.responses';
import * as connections from 'src/modules/connections/connections.responses';
import * as health from 'src/modules/health/health.responses';
import * as identity from 'src/modules/identity/identity.responses';
import * as internal from 'src/modules/internal/internal.responses';
import * as notifications from 'src/modules/notifications/notifications.responses';
import * as keys from 'src/modules/keys/keys.responses';
import * as modelProviders from 'src/modules/model-providers/model-providers.responses';
import * as policy from 'src/modules/policy/policy.responses';
import * as publication from 'src/modules/publication/publication.responses';
import * as receipts from 'src/modules/receipts/receipts.responses';
import * as routing from 'src/modules/routing/routing.responses';
import * as webhooks from 'src/modules/webhooks/webhooks.responses';
import * as runs from 'src/modules/workers/runs.responses';
import * as workers from 'src/modules/workers/workers.responses';
import * as workspaces from 'src/modules/workspaces/workspaces.responses';
import * as audit from 'src/modules/audit/audit-vocabulary';
import * as usage from 'src/modules/usage/document-schema';

/** Swagger UI; the document is at `{OPENAPI_PATH}/openapi.json`. Served outside the controllers, so the access guard never sees them. */
export const OPENAPI_PATH = 'api/docs';

/** What the document says about one handler, read from its declarations. */
interface Route {
  method: string;
  path: string;
  access: Access;
  success: number;
  body: boolean;
  query: boolean;
  /** `@Returns`: the success body; null for `@OnlyRefuses`. */
  returns?: Schema | null;
  /** `@Streams`: a success body of another media type than JSON. */
  streams?: { mediaType: string; description: string };
  /** `@Answers`: the statuses the handler answers of its own. */
  answers: Answer[];
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

/**
 * The modules whose exported `*_SCHEMA` constants are named in `components.schemas`
 * (`KEY_LIST_SCHEMA` is `KeyList`); a schema not exported from one of them stays inline.
 */
const RESPONSE_MODULES: Record<string, unknown>[] = [approvals, audit, catalog, connections, health, identity, internal, keys, modelProviders, notifications, policy, publication, receipts, routing, runs, usage, webhooks, workers, workspaces];

function schemaNames(): Map<object, string> {
  const names = new Map<object, string>();
  for (const module of RESPONSE_MODULES) {
    for (const [constant, schema] of Object.entries(module)) {
      const match = /^([A-Z0-9_]+)_SCHEMA$/.exec(constant);
      if (!match || typeof schema !== 'object' || schema === null) continue;
      const name = match[1].toLowerCase().replace(/(^|_)([a-z0-9])/g, (_, __, c: string) => c.toUpperCase());
      if ([...names.values()].includes(name) || name in ERROR_SCHEMAS) throw new Error(`two response schemas are named ${name}`);
      names.set(schema, name);
    }
  }
  return names;
}

/** Replaces every named schema inside `value` by a reference, collecting it (once) in `components`. */
function hoist(value: unknown, names: Map<object, string>, components: Record<string, unknown>): unknown {
  if (Array.isArray(value)) return value.map((v) => hoist(v, names, components));
  if (value === null || typeof value !== 'object') return value;
  const copy = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, hoist(v, names, components)]));
  const name = names.get(value);
  if (name === undefined) return copy;
  components[name] ??= copy;
  return ref(name);
}
const json = (schema: object) => ({ 'application/json': { schema } });

const ERROR_SCHEMAS: Record<string, SchemaObject> = {
  Detail: {
    type: 'object',
    required: ['detail'],
    properties: { detail: { type: 'string' } },
    description: 'Most errors: `{detail: "message"}` with the exact message of the specification.',
  },
  ValidationError: {
    type: 'object',
    required: ['detail'],
    properties: {
      detail: {
        type: 'array',
        items: {
          type: 'object',
          required: ['loc', 'msg', 'type'],
          properties: {
            loc: { type: 'array', items: { oneOf: [{ type: 'string' }, { type: 'integer' }] } },
            msg: { type: 'string' },
            type: { type: 'string', description: 'pydantic vocabulary: missing, extra_forbidden, string_too_long, ...' },
          },
        },
      },
    },
    description: 'Validation failures (422): one entry per failing field.',
  },
  ServiceError: {
    type: 'object',
    required: ['error'],
    properties: { error: { type: 'object', required: ['code', 'message'], properties: { code: { type: 'string' }, message: { type: 'string' } } } },
    description: 'Service failures: `{error: {code, message}}` (e.g. `upstream_error`, `internal_error`, `policy_compiler_busy`).',
  },
};

function controllersOf(modules: Type[]): Type[] {
  return modules.flatMap((m) => (Reflect.getMetadata(MODULE_METADATA.CONTROLLERS, m) as Type[] | undefined) ?? []);
}

/** Every handler of the application with what it declares. */
export function routes(): Route[] {
  const out: Route[] = [];
  for (const controller of controllersOf(DOMAIN_MODULES as Type[])) {
    const base = String(Reflect.getMetadata(PATH_METADATA, controller) ?? '');
    for (const name of Object.getOwnPropertyNames(controller.prototype)) {
      const handler = controller.prototype[name];
      if (name === 'constructor' || typeof handler !== 'function' || Reflect.getMetadata(PATH_METADATA, handler) === undefined) continue;
      const method = RequestMethod[Reflect.getMetadata(METHOD_METADATA, handler) as number].toLowerCase();
      const path = `/${[base, String(Reflect.getMetadata(PATH_METADATA, handler))].filter((p) => p && p !== '/').join('/')}`
        .replace(/\/+/g, '/')
        .replace(/:(\w+)/g, '{$1}');
      const args = Object.keys((Reflect.getMetadata(ROUTE_ARGS_METADATA, controller, name) as object | undefined) ?? {});
      const has = (type: RouteParamtypes) => args.some((key) => key.split(':')[0] === String(type));
      const redirect = Reflect.getMetadata(REDIRECT_METADATA, handler) !== undefined;
      out.push({
        method,
        path,
        access: (Reflect.getMetadata(ACCESS_KEY, handler) ?? Reflect.getMetadata(ACCESS_KEY, controller)) as Access,
        success: redirect ? 302 : ((Reflect.getMetadata(HTTP_CODE_METADATA, handler) as number | undefined) ?? (method === 'post' ? 201 : 200)),
        body: has(RouteParamtypes.BODY),
        query: has(RouteParamtypes.QUERY),
        returns: Reflect.getMetadata(RETURNS_KEY, handler) as Schema | null | undefined,
        streams: Reflect.getMetadata(STREAMS_KEY, handler) as Route['streams'],
        answers: (Reflect.getMetadata(ANSWERS_KEY, handler) as Answer[] | undefined) ?? [],
      });
    }
  }
  return out;
}

/** Error responses shared by many operations (`#/components/responses/...`). */
const ERROR_RESPONSES: Record<string, [string, string | string[]]> = {
  Malformed: ['Malformed JSON body', 'Detail'],
  SessionRejected: ['Session required, or not accepted', 'Detail'],
  ServiceTokenRejected: ['Service token not accepted', 'Detail'],
  Forbidden: ["Action not permitted for the caller's role", 'Detail'],
  NotFound: ['Workspace not found (also for a non-member)', 'Detail'],
  Conflict: ['Workspace is frozen', 'Detail'],
  TooLarge: ['Request body too large', 'Detail'],
  Invalid: ['Validation failure', 'ValidationError'],
  Internal: ['Internal error', 'ServiceError'],
  // PostgreSQL unavailable (refused, reset, terminated, not answering in time): src/platform/http/exception.filter.ts.
  IdentityOrDatabaseUnavailable: ['Dashboard identity is not configured (`{detail}`), or PostgreSQL is unavailable (`database_unavailable`)', ['Detail', 'ServiceError']],
  IdentityOrReadModelUnavailable: ['Dashboard identity is not configured, or PostgreSQL is unavailable (`Observe read model unavailable`)', 'Detail'],
  ServiceAuthOrDatabaseUnavailable: ['Service authentication is not configured (`{detail}`), or PostgreSQL is unavailable (`database_unavailable`)', ['Detail', 'ServiceError']],
};
type ErrorResponse = keyof typeof ERROR_RESPONSES;
const error = (name: ErrorResponse) => ({ $ref: `#/components/responses/${name}` });

/** A route's own answers at one status, merged with the shared responses it also answers there: any of their bodies. */
function merged(shared: ErrorResponse[], answers: Answer[]): ResponseObject {
  const description = [...shared.map((name) => ERROR_RESPONSES[name][0]), ...answers.map((a) => a.description)].join('; ');
  const bodies = [...shared.flatMap((name) => ERROR_RESPONSES[name][1]), ...answers.map((a) => a.body)].filter((b) => b !== null);
  const schemas = [...new Map(bodies.map((b) => (typeof b === 'string' ? ref(b) : b)).map((b) => [JSON.stringify(b), b as SchemaObject])).values()];
  if (schemas.length === 0) return { description };
  return { description, content: json(schemas.length === 1 ? schemas[0] : { anyOf: schemas }) };
}

function success(route: Route): ResponseObject {
  if (route.success === 204) return { description: 'No content' };
  if (route.success === 302) return { description: 'Redirect (Location header)' };
  if (route.streams) return { description: route.streams.description, content: { [route.streams.mediaType]: { schema: { type: 'string' } } } };
  return { description: 'Success', content: json(route.returns ?? {}) };
}

/** The responses a route's declarations promise: its success, the errors of its access kind, body and query, and its own answers. */
function responses(route: Route): Record<string, ResponseObject | ReferenceObject> {
  const shared: Record<number, ErrorResponse[]> = {};
  const add = (status: number, name: ErrorResponse) => (shared[status] ??= []).push(name);
  if (route.body) {
    add(400, 'Malformed');
    add(413, 'TooLarge');
  }
  if (route.body || route.query) add(422, 'Invalid');
  const access = route.access;
  // Every caller is looked up in PostgreSQL: a 503 when it is unavailable (src/platform/http/exception.filter.ts).
  if (access.kind === 'internal') {
    add(401, 'ServiceTokenRejected');
    add(503, 'ServiceAuthOrDatabaseUnavailable');
  }
  if (access.kind === 'session' || access.kind === 'workspace') {
    add(401, 'SessionRejected');
    add(503, isReadModelRoute(route.path) ? 'IdentityOrReadModelUnavailable' : 'IdentityOrDatabaseUnavailable');
  }
  if (access.kind === 'workspace') {
    if (ACTION_MIN_ROLE[access.action] !== 'viewer') add(403, 'Forbidden');
    add(404, 'NotFound');
    if (!FROZEN_ALLOWED.has(access.action)) add(409, 'Conflict');
  }
  add(500, 'Internal');
  const out: Record<string, ResponseObject | ReferenceObject> = {};
  if (route.returns !== null) out[route.success] = success(route);
  const statuses = new Set([...Object.keys(shared).map(Number), ...route.answers.map((a) => a.status)]);
  for (const status of statuses) {
    const names = shared[status] ?? [];
    const answers = route.answers.filter((a) => a.status === status);
    if (out[status] && answers.length > 0) throw new Error(`${route.method} ${route.path}: @Answers(${status}) repeats its success status`);
    out[status] = names.length === 1 && answers.length === 0 ? error(names[0]) : merged(names, answers);
  }
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => Number(a) - Number(b)));
}

/** OpenAPI 3.1 has no `nullable`: `{type: T, nullable: true}` becomes `{type: [T, "null"]}`, anything else `anyOf` with null. */
function withoutNullable(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutNullable);
  if (value === null || typeof value !== 'object') return value;
  const { nullable, ...rest } = value as Record<string, unknown>;
  const out = Object.fromEntries(Object.entries(rest).map(([k, v]) => [k, withoutNullable(v)]));
  if (nullable !== true) return out;
  if (typeof out.type === 'string') return { ...out, type: [out.type, 'null'] };
  return { anyOf: [out, { type: 'null' }] };
}

/** Responses, security and the caller's access for every operation, from the handlers' declarations. */
function annotate(document: OpenAPIObject): void {
  const names = schemaNames();
  const named: Record<string, unknown> = {};
  for (const route of routes()) {
    const operation = document.paths[route.path]?.[route.method as 'get'];
    if (!operation) throw new Error(`route missing from the OpenAPI document: ${route.method.toUpperCase()} ${route.path}`);
    operation.responses = hoist(responses(route), names, named) as typeof operation.responses;
    // Workspace routes read `ws` through the access guard, not a @Param, so Swagger does not see it.
    const declared = new Set((operation.parameters ?? []).map((p) => ('name' in p ? p.name : '')));
    for (const [, name] of route.path.matchAll(/\{(\w+)\}/g)) {
      if (!declared.has(name)) operation.parameters = [...(operation.parameters ?? []), { name, in: 'path', required: true, schema: { type: 'string' } }];
    }
    const kind = route.access.kind;
    operation.security = kind === 'public' ? [] : [{ [kind === 'internal' ? 'service' : 'session']: [] }];
    const who = kind === 'workspace' ? `action \`${route.access.action}\`` : kind === 'internal' ? 'gateway service JWT' : kind === 'session' ? 'any operator session' : 'open';
    operation.description = [operation.description, `Access: ${who}.`].filter(Boolean).join('\n\n');
  }
  document.components = {
    ...document.components,
    schemas: { ...document.components?.schemas, ...ERROR_SCHEMAS, ...Object.fromEntries(Object.entries(named).sort(([a], [b]) => a.localeCompare(b))) } as Record<string, SchemaObject>,
    responses: Object.fromEntries(
      Object.entries(ERROR_RESPONSES).map(([name, [description, schema]]) => [name, { description, content: json(Array.isArray(schema) ? { anyOf: schema.map(ref) } : ref(schema)) }]),
    ),
  };
}

/**
 * The OpenAPI 3.1 document of the whole API, built from the controllers, the DTOs (through the
 * committed plugin metadata) and the access declarations. Call `loadOpenApiMetadata` first.
 */
export function buildOpenApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setOpenAPIVersion('3.1.0')
    .setTitle('Agent gateway control plane')
    .setDescription(
      'Operator API (`/api/v1`, operator session tokens) and the gateway-facing API (`/internal/v1`, service JWTs). ' +
        'Exact messages, business rules and snapshot contents: the guides under `docs/` in the repository.',
    )
    .setVersion('1')
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'RS256 operator session token from IDENTITY_ISSUER' }, 'session')
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'HS256 service JWT (iss gateway, aud control)' }, 'service')
    .build();
  const document = SwaggerModule.createDocument(app, config, { operationIdFactory: (controller, method) => `${controller}_${method}` });
  annotate(document);
  return withoutNullable(document) as OpenAPIObject;
}

/** The DTO metadata of `metadata.ts` (what the Swagger compiler plugin would have emitted). */
export function loadOpenApiMetadata(): Promise<void> {
  return SwaggerModule.loadPluginMetadata(metadata);
}

/** Serves Swagger UI at /api/docs and the document at /api/docs/openapi.json; the document is built on first use. */
export async function setupOpenApi(app: INestApplication): Promise<void> {
  await loadOpenApiMetadata();
  SwaggerModule.setup(OPENAPI_PATH, app, () => buildOpenApiDocument(app), { jsonDocumentUrl: `${OPENAPI_PATH}/openapi.json`, raw: ['json'] });
}
