import { Schema, closedObject, id, nullableText, nullableTimestamp, timestamp } from 'src/common/http/document-schema';
import { EVENT_TYPES } from 'src/modules/notifications/events';


const ENDPOINT_PROPERTIES: Record<string, Schema> = {
  endpoint_id: { type: 'string', pattern: '^nep_' },
  workspace_id: id,
  url: id,
  event_types: { type: 'array', minItems: 1, maxItems: 64, items: id },
  format: { enum: ['standard', 'slack'] },
  description: { type: ['string', 'null'] },
  enabled: { type: 'boolean' },
  disabled_reason: { enum: [null, 'failing', 'gone', 'operator'] },
  revision: { type: 'integer', minimum: 1 },
  secret_last4: { type: 'string' },
  secret_rotated_at: nullableTimestamp,
  created_at: timestamp,
  updated_at: timestamp,
};

/** A notification endpoint: never its secret. */
export const NOTIFICATION_ENDPOINT_SCHEMA: Schema = closedObject(ENDPOINT_PROPERTIES);
/** The endpoint with its `secret`, answered only by create and rotate-secret. */
export const NOTIFICATION_ENDPOINT_WITH_SECRET_SCHEMA: Schema = closedObject({ ...ENDPOINT_PROPERTIES, secret: { type: 'string', pattern: '^whsec_' } });
export const NOTIFICATION_ENDPOINT_LIST_SCHEMA: Schema = closedObject({ endpoints: { type: 'array', maxItems: 20, items: NOTIFICATION_ENDPOINT_SCHEMA } });

export const NOTIFICATION_ATTEMPT_SCHEMA: Schema = closedObject({
  attempt_id: { type: 'string', pattern: '^nat_' },
  message_id: id,
  type: { enum: [...EVENT_TYPES] },
  attempt: { type: 'integer', minimum: 1 },
  status: { enum: ['succeeded', 'failed'] },
  response_status: { type: ['integer', 'null'] },
  error: { enum: [null, 'timeout', 'connection', 'refused_target', 'http_status'] },
  duration_ms: { type: 'integer', minimum: 0 },
  response_excerpt: { type: 'string', maxLength: 1024 },
  attempted_at: timestamp,
});
export const NOTIFICATION_ATTEMPT_LIST_SCHEMA: Schema = closedObject({ attempts: { type: 'array', items: NOTIFICATION_ATTEMPT_SCHEMA }, next_cursor: nullableText });

export const NOTIFICATION_MESSAGE_SCHEMA: Schema = closedObject({
  message_id: { type: 'string', pattern: '^msg_' },
  type: { enum: [...EVENT_TYPES] },
  timestamp,
  data: { type: 'object', required: ['workspace_id'], properties: { workspace_id: id } },
  deliveries: {
    type: 'array',
    items: closedObject({
      endpoint_id: id,
      state: { enum: ['pending', 'delivered', 'failed'] },
      attempts: { type: 'integer', minimum: 0 },
      last_attempt_at: nullableTimestamp,
      next_attempt_at: nullableTimestamp,
    }),
  },
});
export const NOTIFICATION_MESSAGE_LIST_SCHEMA: Schema = closedObject({ messages: { type: 'array', items: NOTIFICATION_MESSAGE_SCHEMA }, next_cursor: nullableText });

export const MESSAGE_ACCEPTED_SCHEMA: Schema = closedObject({ message_id: { type: 'string', pattern: '^msg_' } });
export const REQUEUED_SCHEMA: Schema = closedObject({ requeued: { type: 'integer', minimum: 0 } });
