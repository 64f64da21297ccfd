import { closedObject, Schema } from 'src/common/http/document-schema';

/** Liveness: `ok` is always true. */
export const HEALTH_SCHEMA: Schema = closedObject({ ok: { const: true } });

const PENDING: Schema = {
  type: 'object',
  description: 'entries delivered to group `control` and not yet acknowledged, per stream',
  additionalProperties: { type: 'integer', minimum: 0 },
};
const MESSAGE: Schema = { enum: ['unreachable', 'migrations pending', 'backlog over READY_STREAM_BACKLOG_MAX'], description: 'a fixed text, never the cause' };

/** A component (database, redis, migrations) that answers. */
export const READINESS_UP_SCHEMA: Schema = closedObject({ status: { const: 'up' } });
/** A component that does not answer, or migrations not applied. */
export const READINESS_DOWN_SCHEMA: Schema = closedObject({ status: { const: 'down' }, message: MESSAGE });
/** The stream backlog under READY_STREAM_BACKLOG_MAX. */
export const READINESS_STREAMS_UP_SCHEMA: Schema = closedObject({ status: { const: 'up' }, pending: PENDING });
/** The stream backlog over READY_STREAM_BACKLOG_MAX (with `pending`), or not measurable. */
export const READINESS_STREAMS_DOWN_SCHEMA: Schema = {
  type: 'object',
  properties: { status: { const: 'down' }, message: MESSAGE, pending: PENDING },
  required: ['status', 'message'],
  additionalProperties: false,
};

/** The components by name; `redis` and `streams` only when REDIS_URL is set. */
const components = (description: string, component: Schema, streams: Schema, required: string[] = []): Schema => ({
  type: 'object',
  description,
  properties: { database: component, redis: component, migrations: component, streams },
  required,
  additionalProperties: false,
});

/** Readiness (terminus's shape): every component is up. */
export const READINESS_SCHEMA: Schema = closedObject({
  status: { const: 'ok' },
  info: components('the components that are up', READINESS_UP_SCHEMA, READINESS_STREAMS_UP_SCHEMA, ['database', 'migrations']),
  error: { type: 'object', description: 'empty: no component is down', properties: {}, additionalProperties: false },
  details: components('every component', READINESS_UP_SCHEMA, READINESS_STREAMS_UP_SCHEMA, ['database', 'migrations']),
});

/** Not ready (terminus's shape): `error` names what is down; `shutting_down` while the process stops. */
export const READINESS_FAILURE_SCHEMA: Schema = closedObject({
  status: { enum: ['error', 'shutting_down'] },
  info: components('the components that are up', READINESS_UP_SCHEMA, READINESS_STREAMS_UP_SCHEMA),
  error: components('the components that are down', READINESS_DOWN_SCHEMA, READINESS_STREAMS_DOWN_SCHEMA),
  details: components(
    'every component',
    { oneOf: [READINESS_UP_SCHEMA, READINESS_DOWN_SCHEMA] },
    { oneOf: [READINESS_STREAMS_UP_SCHEMA, READINESS_STREAMS_DOWN_SCHEMA] },
    ['database', 'migrations'],
  ),
});
