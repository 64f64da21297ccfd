import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { STATUS_CODES } from 'node:http';
import { ApiError, FieldValidationError, ServiceError } from 'src/common/http/errors';
import { errorFields } from 'src/common/logging/error-fields';

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
    const response = ctx.getResponse();
    const [status, body] = this.describe(exception);
    httpAdapter.reply(response, body, status);
  }

  private describe(exception: unknown): [number, unknown] {
    if (exception instanceof ApiError || exception instanceof FieldValidationError || exception instanceof ServiceError) {
      return [exception.getStatus(), exception.getResponse()];
    }
    if (exception instanceof HttpException) {
      // The framework's own: an unknown route, and on Fastify a body that is not JSON, an oversize
      // body or an unsupported type (Express's are ApiErrors: src/common/http/body.ts). Their
      // messages are the parser's, so answer a fixed text per status instead.
      const status = exception.getStatus();
      const cause = exception.message;
      if (status === 400) return [400, { detail: /JSON/i.test(cause) ? 'malformed JSON body' : 'malformed request' }];
      if (status === 413) return [413, { detail: 'request body too large' }];
      return [status, { detail: STATUS_CODES[status] ?? 'error' }];
    }
    // The kind, the driver's code and the frames, never the message: a database error quotes the input.
    this.logger.error({
      msg: 'unhandled error',
      ...errorFields(exception),
      stack: exception instanceof Error ? exception.stack?.split('\n').filter((line) => line.trimStart().startsWith('at ')).join('\n') : undefined,
    });
    return [500, { error: { code: 'internal_error', message: 'internal server error' } }];
  }
}
