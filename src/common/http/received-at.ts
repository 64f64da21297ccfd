import { createParamDecorator, ExecutionContext, InternalServerErrorException } from '@nestjs/common';

/**
 * When the request arrived (set by the access-log middleware before any guard or pool wait), for
 * rules about requests that overlap: a write that committed after this instant raced this request.
 * A 500 when the middleware did not run, so a missing middleware fails loudly.
 */
export const ReceivedAt = createParamDecorator((_: unknown, ctx: ExecutionContext): Date => {
  const request = ctx.switchToHttp().getRequest<{ raw?: { receivedAt?: number }; receivedAt?: number }>();
  // Fastify hands middleware the raw node request, Express the request itself.
  const receivedAt = (request.raw ?? request).receivedAt;
  if (receivedAt === undefined) throw new InternalServerErrorException();
  return new Date(receivedAt);
});
