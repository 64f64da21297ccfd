import { HttpException } from '@nestjs/common';

/** A failure answered in the `{detail: string}` shape. */
export class ApiError extends HttpException {
  constructor(status: number, readonly detail: string) {
    super({ detail }, status);
  }
}

export interface FieldError {
  loc: (string | number)[];
  msg: string;
  type: string;
}

/** A validation failure answered 422 (or another status) with `detail` as a list of `{loc, msg, type}`. */
export class FieldValidationError extends HttpException {
  constructor(readonly errors: FieldError[], status = 422) {
    super({ detail: errors }, status);
  }
}

/** A service failure answered in the `{error: {code, message}}` envelope. */
export class ServiceError extends HttpException {
  constructor(status: number, readonly code: string, message: string) {
    super({ error: { code, message } }, status);
  }
}

export const notFound = (detail: string) => new ApiError(404, detail);
export const conflict = (detail: string) => new ApiError(409, detail);
export const badRequest = (detail: string) => new ApiError(400, detail);
export const queryError = (field: string, msg: string, type = 'value_error') => new FieldValidationError([{ loc: ['query', field], msg, type }]);
export const bodyError = (loc: (string | number)[], msg: string, type = 'value_error') => new FieldValidationError([{ loc: ['body', ...loc], msg, type }]);

/** PostgreSQL unavailable, on operator and internal routes (src/platform/http/exception.filter.ts). */
export const DATABASE_UNAVAILABLE = { error: { code: 'database_unavailable', message: 'database unavailable' } };

/**
 * The usage and audit routes, whose unavailable read model the specification answers
 * `{detail: "Observe read model unavailable"}` (section 7), database outages included. Takes a
 * route template in either spelling (`:ws`, OpenAPI's `{ws}`).
 */
export const isReadModelRoute = (template: string) => /^\/api\/v1\/workspaces\/(:ws|\{ws\})\/(usage|audit)(\/|$)/.test(template);
