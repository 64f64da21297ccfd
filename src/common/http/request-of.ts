import { ExecutionContext } from '@nestjs/common';

/**
 * The HTTP request of a guard's or parameter decorator's context. `switchToHttp()` assigns three
 * new closures to the context on every call; the guards of a workspace route asked it six times a
 * request. The request is the context's first argument on both platforms.
 */
export function requestOf<T>(context: ExecutionContext): T {
  return context.getArgByIndex<T>(0);
}
