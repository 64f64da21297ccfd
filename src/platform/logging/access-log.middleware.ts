import { Inject, Injectable, NestMiddleware } from '@nestjs/common';
import { randomFillSync } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { writeLine } from 'src/common/logging/log-sink';
import { MetricsService } from 'src/platform/metrics/metrics.service';
import { APP_CONFIG, AppConfig } from 'src/config/config';

interface RequestLike {
  method: string;
  headers: Record<string, string | string[] | undefined>;
  requestId?: string;
  /** `performance.now()` at which the request arrived (src/common/http/received-at.ts). */
  receivedAt?: number;
  /** Set by the auth guard once the router matched a handler. */
  routeTemplate?: string;
}
interface ResponseLike {
  statusCode: number;
  setHeader(name: string, value: string): void;
  on(event: 'finish', listener: () => void): void;
}

const REQUEST_ID = /^[A-Za-z0-9_.:-]{1,128}$/;
const ID_BYTES = 12;
/** Random bytes for request ids, drawn 256 ids at a time: one `randomFillSync` instead of a `randomBytes` per request. */
const idPool = Buffer.alloc(ID_BYTES * 256);
let idAt = idPool.length;

/** `req_` plus 24 lowercase hex characters (96 random bits), as `newId('req')`. */
function newRequestId(): string {
  if (idAt === idPool.length) {
    randomFillSync(idPool);
    idAt = 0;
  }
  const id = `req_${idPool.toString('hex', idAt, idAt + ID_BYTES)}`;
  idAt += ID_BYTES;
  return id;
}

type Observer = { observe(seconds: number): void };

/**
 * One access-log line and one duration observation per request: method, path template, status,
 * duration and request id. Never the URL with its values, a header or a body. The line is built as
 * text (every value is a method token, a route template of the code, a number or a request id of
 * REQUEST_ID's characters: nothing to escape) and written in batches (src/common/logging/log-sink.ts).
 */
@Injectable()
export class AccessLogMiddleware implements NestMiddleware {
  /** Access lines are `info`: not built at all at a higher LOG_LEVEL. */
  private readonly logs: boolean;
  /** The histogram's child per method, route and status: no label hashing per request. */
  private readonly observers = new Map<string, Observer>();

  constructor(
    private readonly metrics: MetricsService,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.logs = config.logLevel === 'info' || config.logLevel === 'debug';
  }

  use(req: RequestLike, res: ResponseLike, next: () => void) {
    const started = performance.now();
    req.receivedAt = started;
    const offered = req.headers['x-request-id'];
    const requestId = typeof offered === 'string' && REQUEST_ID.test(offered) ? offered : newRequestId();
    req.requestId = requestId;
    res.setHeader('X-Request-Id', requestId);
    res.on('finish', () => this.finish(req, res.statusCode, performance.now() - started, requestId));
    next();
  }

  private finish(req: RequestLike, status: number, durationMs: number, requestId: string): void {
    const route = req.routeTemplate ?? 'unmatched';
    const series = `${req.method} ${route} ${status}`;
    let observer = this.observers.get(series);
    if (!observer) this.observers.set(series, (observer = this.metrics.httpDuration.labels(req.method, route, String(status))));
    observer.observe(durationMs / 1000);
    if (!this.logs) return;
    writeLine(
      `{"time":"${new Date().toISOString()}","level":"info","context":"access","msg":"request","method":"${req.method}","route":"${route}","status":${status},"duration_ms":${Math.round(durationMs * 100) / 100},"request_id":"${requestId}"}\n`,
    );
  }
}
