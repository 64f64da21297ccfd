import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { isOperatorPath, NO_STORE } from 'src/common/http/no-store.interceptor';

/**
 * Maps every failure onto the specification's three body shapes. HttpExceptions raised by this
 * project already carry their body; framework ones become `{detail}`; anything else is a masked 500.
 */
@Catch()
export class ApiExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('http');

  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const { httpAdapter } = this.adapterHost;
    const ctx = host.switchToHttp();
    const request = ctx.getRequest();
    const response = ctx.getResponse();
    const [status, body] = this.describe(exception);
    if (isOperatorPath(httpAdapter.getRequestUrl(request))) httpAdapter.setHeader(response, 'Cache-Control', NO_STORE);
    httpAdapter.reply(response, body, status);
  }

  private describe(exception: unknown): [number, unknown] {
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      const body = exception.getResponse();
      if (typeof body === 'object' && body !== null && ('detail' in body || 'error' in body) && Object.keys(body).length === 1) {
        return [status, body];
      }
      const message = typeof body === 'string' ? body : (body as { message?: unknown }).message;
      return [status, { detail: typeof message === 'string' ? message : exception.message }];
    }
    const parserError = exception as { type?: string; status?: number };
    if (parserError && typeof parserError.status === 'number' && typeof parserError.type === 'string') {
      // body-parser failures: malformed JSON, oversize or unsupported bodies
      if (parserError.type === 'entity.parse.failed') return [400, { detail: 'malformed JSON body' }];
      if (parserError.type === 'entity.too.large') return [413, { detail: 'request body too large' }];
      return [400, { detail: 'malformed request body' }];
    }
    this.logger.error({ msg: 'unhandled error', error: exception instanceof Error ? exception.name : typeof exception, stack: exception instanceof Error ? exception.stack : undefined });
    return [500, { error: { code: 'internal_error', message: 'internal server error' } }];
  }
}
