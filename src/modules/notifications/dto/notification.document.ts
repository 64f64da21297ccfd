import { formatTime, formatTimeRequired } from 'src/common/time/time';
import { NotificationAttempt } from 'src/modules/notifications/entities/notification-attempt.entity';
import { NotificationEndpoint } from 'src/modules/notifications/entities/notification-endpoint.entity';
import { DeliveryRow, MessageRow } from 'src/modules/notifications/notification-messages.repository';

/** The endpoint document: never the secret, only its last four characters. */
export function toEndpointDocument(e: NotificationEndpoint) {
  return {
    endpoint_id: e.id,
    workspace_id: e.workspaceId,
    url: e.url,
    event_types: e.eventTypes,
    format: e.format,
    description: e.description,
    enabled: e.enabled,
    disabled_reason: e.disabledReason,
    revision: e.revision,
    secret_last4: e.secret.slice(-4),
    secret_rotated_at: formatTime(e.secretRotatedAt),
    created_at: formatTimeRequired(e.createdAt),
    updated_at: formatTimeRequired(e.updatedAt),
  };
}

export function toDeliveryDocument(d: DeliveryRow) {
  return {
    endpoint_id: d.endpoint_id,
    state: d.state,
    attempts: d.attempts,
    last_attempt_at: formatTime(d.last_attempt_at),
    next_attempt_at: d.state === 'pending' ? formatTime(d.next_attempt_at) : null,
  };
}

/** The message document: its three members as stored, with `message_id` and `deliveries`. */
export function toMessageDocument(m: MessageRow, deliveries: DeliveryRow[]) {
  return { message_id: m.id, ...(JSON.parse(m.body) as Record<string, unknown>), deliveries: deliveries.map(toDeliveryDocument) };
}

export function toAttemptDocument(a: NotificationAttempt) {
  return {
    attempt_id: a.id,
    message_id: a.messageId,
    type: a.type,
    attempt: a.attempt,
    status: a.status,
    response_status: a.responseStatus,
    error: a.error,
    duration_ms: a.durationMs,
    response_excerpt: a.responseExcerpt,
    attempted_at: formatTimeRequired(a.attemptedAt),
  };
}
