import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { Observable } from 'rxjs';

export const NO_STORE = 'no-store';
export const isOperatorPath = (url: string) => url === '/api/v1' || url.startsWith('/api/v1/') || url.startsWith('/api/v1?');

/** `Cache-Control: no-store` on every /api/v1 answer (the exception filter does the same for errors). */
@Injectable()
export class NoStoreInterceptor implements NestInterceptor {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const { httpAdapter } = this.adapterHost;
    const http = context.switchToHttp();
    if (isOperatorPath(httpAdapter.getRequestUrl(http.getRequest()))) {
      httpAdapter.setHeader(http.getResponse(), 'Cache-Control', NO_STORE);
    }
    return next.handle();
  }
}
