import { Injectable, NestMiddleware } from '@nestjs/common';
import { IncomingMessage, ServerResponse, STATUS_CODES } from 'node:http';
import { Duplex } from 'node:stream';
import { parse as parseQuery } from 'node:querystring';
import { parse as parseJson } from 'secure-json-parse';
import { ApiError } from 'src/common/http/errors';
import { NO_STORE_PREFIX } from 'src/common/http/no-store.middleware';

/** Largest JSON body accepted, in bytes (a 256 KiB policy source, escaped, fits). */
export const BODY_LIMIT = 1024 * 1024;
/**
 * Longest path parameter Fastify's router accepts: more than node's header limit (16 KiB) lets
 * through, so every length reaches the handlers' own validation, as on Express.
 */
export const MAX_PARAM_LENGTH = 16 * 1024;

/** Flat query and form parsing, as Fastify's: `a[b]=1` stays a key, a repeated key becomes a list. */
export const parseFlat = (text: string) => parseQuery(text, undefined, undefined, { maxKeys: 0 });

const TOO_LARGE = new ApiError(413, 'request body too large');

/** The body as UTF-8 text, as Fastify reads it (no decompression, no charset but UTF-8). */
function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= BODY_LIMIT) return void chunks.push(chunk);
      req.off('data', onData);
      req.resume();
      reject(TOO_LARGE);
    };
    req.on('data', onData);
    req.once('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.once('error', () => reject(new ApiError(400, 'malformed request body')));
  });
}

/** The media type of a Content-Type header (`application/json; charset=utf-8` is `application/json`), or null when malformed. */
function mediaType(header: string): string | null {
  const type = header.split(';', 1)[0].trim().toLowerCase();
  return /^[!#$%&'*+.^_`|~0-9a-z-]+\/[!#$%&'*+.^_`|~0-9a-z-]+$/.test(type) ? type : null;
}

const PARSERS: Record<string, (text: string) => unknown> = {
  'application/json': (text) => {
    try {
      if (text.length === 0) throw new SyntaxError('empty');
      return parseJson(text, undefined, { protoAction: 'error', constructorAction: 'error' });
    } catch {
      throw new ApiError(400, 'malformed JSON body');
    }
  },
  'text/plain': (text) => text,
  'application/x-www-form-urlencoded': parseFlat,
};

/**
 * Express only: reads a request body the way the Fastify build does, after the access log and
 * no-store middleware: JSON (`__proto__` and `constructor.prototype` keys refused), text and form
 * bodies up to BODY_LIMIT; any other content type is 415. GET and HEAD bodies are not read.
 */
@Injectable()
export class ExpressBodyMiddleware implements NestMiddleware {
  use(req: IncomingMessage & { body?: unknown }, _res: unknown, next: (error?: unknown) => void) {
    if (req.method === 'GET' || req.method === 'HEAD') return next();
    const header = req.headers['content-type'];
    const chunked = req.headers['transfer-encoding'] !== undefined;
    const length = req.headers['content-length'];
    if (header === undefined && !chunked && (length === undefined || length === '0')) return next();
    const parser = header === undefined ? undefined : PARSERS[mediaType(header) ?? ''];
    if (!parser) return next(new ApiError(415, STATUS_CODES[415]!));
    // A declared length over the limit is refused before reading, as Fastify does.
    if (Number(length) > BODY_LIMIT) return next(TOO_LARGE);
    readBody(req)
      .then(parser)
      .then((body) => {
        req.body = body;
        next();
      }, next);
  }
}

/** A path with a malformed percent-escape (`/api/v1/%ZZ`), which neither router can decode. */
export function isMalformedPath(url: string): boolean {
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  if (!path.includes('%')) return false;
  try {
    decodeURIComponent(path);
    return false;
  } catch {
    return true;
  }
}

/** The `{detail}` body of a request refused before the application: `malformed request` for 400, else the status text. */
const refusalBody = (status: number) => JSON.stringify({ detail: status === 400 ? 'malformed request' : (STATUS_CODES[status] ?? 'error') });
const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * The answer to a request either router refuses before any middleware runs (a path it cannot
 * decode, or a parameter over Fastify's limit): the `{detail}` shape, no-store under /api/v1.
 */
export function refuseUnroutable(req: IncomingMessage, res: ServerResponse, status: number): void {
  const body = refusalBody(status);
  res.statusCode = status;
  if (req.url?.startsWith(NO_STORE_PREFIX)) res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Content-Type', JSON_TYPE);
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.end(body);
}

/**
 * The answer to a request node's HTTP parser refuses before either framework sees it (a malformed
 * header or request line, an unknown method, a bad `Content-Length` or chunk, headers over 16 KiB):
 * the `{detail}` shape and the connection closed, where node answered with no body and Fastify in
 * its own shape. Installed as Fastify's `clientErrorHandler` and Express's server `clientError` listener.
 */
export function refuseClientError(error: Error & { code?: string }, socket: Duplex): void {
  const response = (socket as { _httpMessage?: ServerResponse })._httpMessage;
  if (error.code === 'ECONNRESET' || !socket.writable || response?.headersSent) return void socket.destroy();
  const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
  const body = refusalBody(status);
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: ${JSON_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
}
