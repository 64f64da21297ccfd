/**
 * The Workers schemas except the runs' (runs.responses.ts), where src/openapi/openapi.ts looks
 * for them (RESPONSE_MODULES): each `*_SCHEMA` exported here is a named component.
 */
export * from 'src/modules/workers/shared.responses';
export * from 'src/modules/workers/reference/reference.responses';
export * from 'src/modules/workers/definitions/definitions.responses';
