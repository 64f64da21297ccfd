import { Injectable, NestMiddleware } from '@nestjs/common';

/** Where every answer carries `Cache-Control: no-store`, errors included (core spec section 1). */
export const NO_STORE_ROUTES = 'api/v1/{*path}';
/** The same, as a URL prefix (for answers given before the router: src/common/http/body.ts). */
export const NO_STORE_PREFIX = '/api/v1/';

/** Sets the header before any handler, guard or filter runs, so no answer under /api/v1 can miss it. */
@Injectable()
export class NoStoreMiddleware implements NestMiddleware {
  use(_req: unknown, res: { setHeader(name: string, value: string): void }, next: () => void) {
    res.setHeader('Cache-Control', 'no-store');
    next();
  }
}
