import { Injectable, Logger, NestMiddleware } from '@nestjs/common';
import { newId } from 'src/common/ids/ids';
import { MetricsService } from 'src/common/metrics/metrics.service';

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

/**
 * One access-log line and one duration observation per request: method, path template, status,
 * duration and request id. Never the URL with its values, a header or a body.
 */
@Injectable()
export class AccessLogMiddleware implements NestMiddleware {
  private readonly logger = new Logger('access');

  constructor(private readonly metrics: MetricsService) {}

  use(req: RequestLike, res: ResponseLike, next: () => void) {
    const started = process.hrtime.bigint();
    req.receivedAt = performance.now();
    const offered = req.headers['x-request-id'];
    const requestId = typeof offered === 'string' && REQUEST_ID.test(offered) ? offered : newId('req');
    req.requestId = requestId;
    res.setHeader('X-Request-Id', requestId);
    res.on('finish', () => {
      const durationMs = Number(process.hrtime.bigint() - started) / 1e6;
      const route = req.routeTemplate ?? 'unmatched';
      this.metrics.httpDuration.observe({ method: req.method, route, status: String(res.statusCode) }, durationMs / 1000);
      this.logger.log({ msg: 'request', method: req.method, route, status: res.statusCode, duration_ms: Math.round(durationMs * 100) / 100, request_id: requestId });
    });
    next();
  }
}
