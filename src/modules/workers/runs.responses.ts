/** The run schemas, where src/openapi/openapi.ts looks for them (RESPONSE_MODULES). */
export * from 'src/modules/workers/runs/runs.responses';
