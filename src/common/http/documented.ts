import { SetMetadata } from '@nestjs/common';
import { Schema } from 'src/common/http/document-schema';

/**
 * What a handler answers beyond what its declarations show, for the OpenAPI document. Every
 * response the e2e suites see is checked against the document (test/support/observed-responses.ts),
 * so these are promises the tests hold the code to.
 */
export const RETURNS_KEY = 'openapi:returns';
export const ANSWERS_KEY = 'openapi:answers';

/** The error body shapes of `components.schemas` (src/openapi/openapi.ts). */
export type ErrorBody = 'Detail' | 'ValidationError' | 'ServiceError';

export interface Answer {
  status: number;
  description: string;
  /** An error shape, a schema of its own, or null for no body. */
  body: ErrorBody | Schema | null;
}

/** The JSON body of the handler's success status. */
export const Returns = (schema: Schema) => SetMetadata(RETURNS_KEY, schema);

export const STREAMS_KEY = 'openapi:streams';

/** The success answer is a stream of another media type (e.g. `application/x-ndjson`), described in words. */
export const Streams = (mediaType: string, description: string) => SetMetadata(STREAMS_KEY, { mediaType, description });

/** The handler has no success answer (a route the specification reserves and always refuses): only its `@Answers`. */
export const OnlyRefuses = () => SetMetadata(RETURNS_KEY, null);

/** A status this handler answers of its own (repeatable): `@Answers(409, '`stale revision`')`. */
export function Answers(status: number, description: string, body: Answer['body'] = 'Detail'): MethodDecorator {
  return (_target, _key, descriptor) => {
    const answers = (Reflect.getMetadata(ANSWERS_KEY, descriptor.value as object) as Answer[] | undefined) ?? [];
    Reflect.defineMetadata(ANSWERS_KEY, [{ status, description, body }, ...answers], descriptor.value as object);
  };
}
