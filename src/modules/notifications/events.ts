/** Every event type of CONTRACT.md section 7. */
export const EVENT_TYPES = [
  'approval.requested',
  'approval.vote_cast',
  'approval.resolved',
  'approval.expiring',
  'budget.threshold_crossed',
  'key.expiring',
  'key.revoked',
  'key.rotated',
  'connection.reauthorization_required',
  'policy.published',
  'notification_endpoint.disabled',
  'audit.event',
  'notification.test',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** `audit.event` only reaches subscribers naming it: never `*` nor `audit.*`. */
export const EXPLICIT_ONLY: EventType = 'audit.event';

const PREFIXES = new Set(EVENT_TYPES.map((t) => t.split('.')[0]));

/** A subscription entry: a type, `prefix.*` for a known prefix, or `*`. */
export function isEventPattern(value: string): boolean {
  if (value === '*') return true;
  if (value.endsWith('.*')) return PREFIXES.has(value.slice(0, -2));
  return (EVENT_TYPES as readonly string[]).includes(value);
}

/** Whether an endpoint's (or a stream's) patterns take `type`. */
export function matchesType(patterns: readonly string[], type: string): boolean {
  if (patterns.includes(type)) return true;
  if (type === EXPLICIT_ONLY) return false;
  return patterns.includes('*') || patterns.includes(`${type.split('.')[0]}.*`);
}

/** The same rule in SQL, over `patterns` (a text[] column) and the type parameter `type`. */
export const MATCHES_SQL = (patterns: string, type: string) =>
  `(${type} = ANY(${patterns}) OR (${type} <> '${EXPLICIT_ONLY}' AND ('*' = ANY(${patterns}) OR split_part(${type}, '.', 1) || '.*' = ANY(${patterns}))))`;

export interface OutboxMessage {
  type: EventType;
  timestamp: string;
  data: Record<string, unknown>;
}

const BIG = '\u0000bigint:';

/** The message as JSON; bigints (money past 2^53) are written as bare JSON integers. */
export function messageJson(message: OutboxMessage): string {
  return JSON.stringify(message, (_key, value: unknown) => (typeof value === 'bigint' ? `${BIG}${value}` : value)).replace(/"\\u0000bigint:(-?\d+)"/g, '$1');
}
