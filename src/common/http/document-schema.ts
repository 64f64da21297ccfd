import { ApiError } from 'src/common/http/errors';

/**
 * A JSON Schema (2020-12) as the response documents use it. `schemaMismatch` (and so
 * `assertConforms`) enforces `type` (one or a list of `object`, `array`, `string`, `integer`,
 * `boolean`, `null`), `properties` with `required` and `additionalProperties: false`, `items`,
 * `enum`, `minimum`, `const` and `format: date-time`, where an `integer` is a safe JS integer or a
 * bigint; the other keywords are documentation, held by the e2e response check
 * (test/support/observed-responses.ts), which validates every response the suites see.
 */
export interface Schema {
  type?: string | string[];
  description?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: false | Schema;
  items?: Schema;
  oneOf?: Schema[];
  enum?: unknown[];
  const?: unknown;
  minimum?: number;
  minItems?: number;
  maxItems?: number;
  maxLength?: number;
  pattern?: string;
  format?: 'date-time' | 'uri';
}

/** The primitives the response documents are built from (one home; `*.responses.ts` import them). */
export const id: Schema = { type: 'string' };
export const text: Schema = { type: 'string' };
export const nullableText: Schema = { type: ['string', 'null'] };
export const count: Schema = { type: 'integer', minimum: 0 };
export const timestamp: Schema = { type: 'string', format: 'date-time' };
export const nullableTimestamp: Schema = { type: ['string', 'null'], format: 'date-time' };
export const strings: Schema = { type: 'array', items: { type: 'string' } };
export const env: Schema = { enum: ['dev', 'stage', 'prod'] };

const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'bigint' || (typeof value === 'number' && Number.isSafeInteger(value))) return 'integer';
  return typeof value;
}

/** The path of the first mismatch, or null when `value` conforms. */
export function schemaMismatch(schema: Schema, value: unknown, path = '$'): string | null {
  const type = typeOf(value);
  if (schema.type !== undefined && !([] as string[]).concat(schema.type).includes(type)) return path;
  if (schema.const !== undefined && value !== schema.const) return path;
  if (schema.enum && !schema.enum.includes(value)) return path;
  if (schema.minimum !== undefined && type === 'integer' && BigInt(value as number | bigint) < BigInt(schema.minimum)) return path;
  if (schema.format === 'date-time' && type === 'string' && !DATE_TIME.test(value as string)) return path;
  if (type === 'array' && schema.items) {
    for (const [i, item] of (value as unknown[]).entries()) {
      const mismatch = schemaMismatch(schema.items, item, `${path}[${i}]`);
      if (mismatch) return mismatch;
    }
  }
  if (type === 'object' && schema.properties) {
    const record = value as Record<string, unknown>;
    for (const key of schema.required ?? []) if (!(key in record)) return `${path}.${key}`;
    for (const [key, item] of Object.entries(record)) {
      const sub = schema.properties[key];
      if (!sub) {
        if (schema.additionalProperties === false) return `${path}.${key}`;
        continue;
      }
      const mismatch = schemaMismatch(sub, item, `${path}.${key}`);
      if (mismatch) return mismatch;
    }
  }
  return null;
}

export const READ_MODEL_UNAVAILABLE = 'Observe read model unavailable';

/** Passes a conforming document through; anything else is a 503, never a partial answer. */
export function assertConforms<T>(schema: Schema, document: T): T {
  if (schemaMismatch(schema, document) !== null) throw new ApiError(503, READ_MODEL_UNAVAILABLE);
  return document;
}

/** A closed object: every listed property required, no other. */
export const closedObject = (properties: Record<string, Schema>): Schema => ({
  type: 'object',
  properties,
  required: Object.keys(properties),
  additionalProperties: false,
});
