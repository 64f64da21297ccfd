import { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';
import { NO_STORE_PREFIX } from 'src/common/http/no-store.middleware';

/** The origins a browser may call the operator API from (`CORS_ORIGINS`): a list, or any (`*`, and then no credentials). */
export type CorsOrigins = readonly string[] | '*';

/** The OpenAPI document (src/openapi/openapi.ts serves it there). */
const OPENAPI_DOCUMENT = '/api/docs/openapi.json';
const WELL_KNOWN = '/.well-known/';

/** The operator API, the OpenAPI document and `/.well-known/*`; never `/internal/*`, `/oauth/callback`, health or metrics. */
export function inCorsScope(url: string): boolean {
  const second = url.charCodeAt(1);
  // `/a...` or `/....`: anything else (`/internal`, `/healthz`, `/oauth`) is out after one comparison each.
  if (second !== 0x61 && second !== 0x2e) return false;
  return (
    url.startsWith(NO_STORE_PREFIX) ||
    url.startsWith(WELL_KNOWN) ||
    (url.startsWith(OPENAPI_DOCUMENT) && (url.length === OPENAPI_DOCUMENT.length || url[OPENAPI_DOCUMENT.length] === '?'))
  );
}

const CORS_ALLOW_METHODS = 'GET, POST, PUT, PATCH, DELETE';
const CORS_ALLOW_HEADERS = 'authorization, content-type, if-match, if-none-match, last-event-id';
const CORS_EXPOSE_HEADERS = 'etag, x-request-id, retry-after';
/** How long a browser may keep a preflight's answer (Chromium caps it at 2 hours). */
const CORS_MAX_AGE_S = 600;

/**
 * Answers the CORS part of a request in scope and says whether it was a preflight (answered, 204).
 * Headers are set on the node response before either framework sees the request, so every answer
 * to an allowed origin carries them, the framework's own refusals and the exception filter's
 * answers included. A request from any other origin gets no `Access-Control-*` header.
 */
function answerCors(origins: CorsOrigins, req: IncomingMessage, res: ServerResponse): boolean {
  res.setHeader('Vary', 'Origin');
  const origin = req.headers.origin;
  if (origin === undefined || (origins !== '*' && !origins.includes(origin))) return false;
  res.setHeader('Access-Control-Allow-Origin', origins === '*' ? '*' : origin);
  if (req.method === 'OPTIONS' && req.headers['access-control-request-method'] !== undefined) {
    res.setHeader('Access-Control-Allow-Methods', CORS_ALLOW_METHODS);
    res.setHeader('Access-Control-Allow-Headers', CORS_ALLOW_HEADERS);
    res.setHeader('Access-Control-Max-Age', String(CORS_MAX_AGE_S));
    res.statusCode = 204;
    res.end();
    return true;
  }
  res.setHeader('Access-Control-Expose-Headers', CORS_EXPOSE_HEADERS);
  return false;
}

/**
 * Puts CORS in front of the server's one request listener (Express's application or Fastify's
 * handler), below both frameworks, so both answer alike. A request outside the scope (the key
 * lookup on `/internal` above all) costs one prefix test and nothing else.
 */
export function serveCors(server: Server, origins: CorsOrigins): void {
  const listeners = server.listeners('request') as RequestListener[];
  if (listeners.length !== 1) throw new Error(`CORS expects the HTTP adapter's one request listener, found ${listeners.length}`);
  const [handle] = listeners;
  server.removeListener('request', handle);
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (inCorsScope(req.url!) && answerCors(origins, req, res)) return;
    handle(req, res);
  });
}
