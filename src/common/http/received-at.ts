import { createParamDecorator, ExecutionContext, InternalServerErrorException } from '@nestjs/common';
import { requestOf } from 'src/common/http/request-of';

/**
 * When the request arrived, as `performance.now()` of this process (a monotonic clock, set by the
 * access-log middleware before any guard or pool wait), for rules about requests that overlap.
 * Only ever compared with another `performance.now()`: the elapsed time since arrival, subtracted
 * from the database's clock, dates the arrival on the clock the database stamps its writes with,
 * so the rule does not depend on this host's wall clock agreeing with the database's.
 * A 500 when the middleware did not run, so a missing middleware fails loudly.
 */
export const ReceivedAt = createParamDecorator((_: unknown, ctx: ExecutionContext): number => {
  const request = requestOf<{ raw?: { receivedAt?: number }; receivedAt?: number }>(ctx);
  // Fastify hands middleware the raw node request, Express the request itself.
  const receivedAt = (request.raw ?? request).receivedAt;
  if (receivedAt === undefined) throw new InternalServerErrorException();
  return receivedAt;
});

/** Seconds since `receivedAt` (a `ReceivedAt` value), on the monotonic clock. */
export function secondsSince(receivedAt: number): number {
  return Math.max(0, performance.now() - receivedAt) / 1000;
}
