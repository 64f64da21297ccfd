import { StreamableFile } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import type { Express } from 'express';
import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import { refuseClientError } from 'src/common/http/body';

/**
 * A constructor building `base`'s objects with `prototype` from the start. Express gives every
 * request and response its own prototypes (`Object.setPrototypeOf` in `app.handle`); changing the
 * prototype of an object node's HTTP code already built and is still using turns node's own
 * property accesses on it (headers, the write path, `finish`) from one shape into several. Built
 * with Express's prototypes, `setPrototypeOf` finds the same one and changes nothing.
 */
function bornWith<T>(base: T, prototype: object): T {
  function Born(this: unknown, ...args: unknown[]) {
    (base as unknown as (...a: unknown[]) => void).apply(this, args);
  }
  Born.prototype = prototype;
  return Born as unknown as T;
}

/**
 * Express's adapter, answering a handler's JSON or text without `res.json`/`res.send` (their
 * content-type parsing, Buffer copy and freshness check cost ~15 us of CPU a request, bench/README.md):
 * the same status, headers and body, written in one `end`, as Fastify does. Its server builds
 * requests and responses with Express's prototypes (`bornWith`) and answers a request node's
 * parser refuses in the `{detail}` shape (`refuseClientError`), as the Fastify build does.
 */
export class LeanExpressAdapter extends ExpressAdapter {
  override initHttpServer(options: Parameters<ExpressAdapter['initHttpServer']>[0]): void {
    if (options?.httpsOptions || options?.forceCloseConnections) {
      super.initHttpServer(options);
    } else {
      const app = this.getInstance<Express>();
      this.httpServer = createServer({ IncomingMessage: bornWith(IncomingMessage, app.request), ServerResponse: bornWith(ServerResponse, app.response) }, app);
    }
    this.httpServer.on('clientError', refuseClientError);
  }

  /** The status Nest decided (a valid code of the route's declaration or the exception filter), without Express's argument checks. */
  override status(response: ServerResponse, statusCode: number): ServerResponse {
    response.statusCode = statusCode;
    return response;
  }

  override reply(response: ServerResponse, body: unknown, statusCode?: number): unknown {
    if (body instanceof StreamableFile || Buffer.isBuffer(body) || (body !== null && body !== undefined && typeof body !== 'object' && typeof body !== 'string')) {
      return super.reply(response, body, statusCode);
    }
    if (statusCode) response.statusCode = statusCode;
    if (body === null || body === undefined) return response.end();
    const json = typeof body !== 'string';
    if (!response.hasHeader('content-type')) response.setHeader('Content-Type', json ? 'application/json; charset=utf-8' : 'text/html; charset=utf-8');
    return response.end(json ? JSON.stringify(body) : body);
  }
}
