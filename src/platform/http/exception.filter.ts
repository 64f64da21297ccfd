import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { STATUS_CODES } from 'node:http';
import { READ_MODEL_UNAVAILABLE } from 'src/common/http/document-schema';
import { ApiError, DATABASE_UNAVAILABLE, FieldValidationError, isReadModelRoute, ServiceError } from 'src/common/http/errors';
import { errorFields } from 'src/common/logging/error-fields';
import { MetricsService } from 'src/platform/metrics/metrics.service';
import { databaseUnavailable } from 'src/database/unavailable';

/**
 * Maps every failure onto the specification's three body shapes. HttpExceptions raised by this
 * project already carry their body; framework 4xx ones become `{detail}`; a database that is
 * unavailable (src/database/unavailable.ts) is a 503, counted and logged once with its cause;
 * anything else, a 5xx HttpException included, is logged and answered as a masked 500 `internal_error`.
 */
@Catch()
export class ApiExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('http');

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly metrics: MetricsService,
  ) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const { httpAdapter } = this.adapterHost;
    const ctx = host.switchToHttp();
    const response = ctx.getResponse();
    const [status, body] = this.describe(exception, ctx.getRequest());
    httpAdapter.reply(response, body, status);
  }

  private describe(exception: unknown, request: { raw?: object } | undefined): [number, unknown] {
    if (exception instanceof ApiError || exception instanceof FieldValidationError || exception instanceof ServiceError) {
      const status = exception.getStatus();
      // A 5xx the specification names (503 read model unavailable, 502 upstream_error, ...): its
      // kind and code are logged, its body is the one the specification gives.
      if (status >= 500) this.logger.warn({ msg: 'service answered 5xx', status, ...errorFields(exception) });
      return [status, exception.getResponse()];
    }
    if (exception instanceof HttpException && exception.getStatus() < 500) {
      // The framework's own: an unknown route, and on Fastify a body that is not JSON, an oversize
      // body or an unsupported type (Express's are ApiErrors: src/common/http/body.ts). Their
      // messages are the parser's, so answer a fixed text per status instead.
      const status = exception.getStatus();
      const cause = exception.message;
      if (status === 400) return [400, { detail: /JSON/i.test(cause) ? 'malformed JSON body' : 'malformed request' }];
      if (status === 413) return [413, { detail: 'request body too large' }];
      return [status, { detail: STATUS_CODES[status] ?? 'error' }];
    }
    const cause = databaseUnavailable(exception);
    if (cause) {
      // A fault outside the service: the client learns only that the database is unavailable (never
      // the driver's text, SQLSTATE or host); the log has the cause, kind and code.
      const route = ((request?.raw ?? request) as { routeTemplate?: string } | undefined)?.routeTemplate;
      this.metrics.databaseUnavailable.inc({ cause });
      this.logger.warn({ msg: 'database unavailable', cause, status: 503, ...(route ? { route } : {}), ...errorFields(exception) });
      return [503, route && isReadModelRoute(route) ? { detail: READ_MODEL_UNAVAILABLE } : DATABASE_UNAVAILABLE];
    }
    // Anything else, a thrown 5xx HttpException included (a route without an access declaration, a
    // broken request context), is a fault: logged with its kind, the driver's code and the frames,
    // never the message (a database error quotes the input), and answered in one masked shape.
    this.logger.error({
      msg: 'unhandled error',
      ...errorFields(exception),
      ...(exception instanceof HttpException ? { status: exception.getStatus() } : {}),
      stack: exception instanceof Error ? exception.stack?.split('\n').filter((line) => line.trimStart().startsWith('at ')).join('\n') : undefined,
    });
    return [500, { error: { code: 'internal_error', message: 'internal server error' } }];
  }
}
