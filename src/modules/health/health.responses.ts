import { closedObject, Schema } from 'src/common/http/document-schema';

/** Liveness: `ok` is always true. */
export const HEALTH_SCHEMA: Schema = closedObject({ ok: { const: true } });
