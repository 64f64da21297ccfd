/**
 * The one decision whether a failure means "the database is unavailable" (a fault outside the
 * service, answered 503) rather than a bug (500). Everything that reaches PostgreSQL goes through
 * the pg driver, so its errors are the only ones to recognise: a SQLSTATE the server sent, a
 * system error of the socket, or one of the driver's own messages (which carry no code).
 */

/** Why the database was unavailable, as logged and counted (`cause` of control_database_unavailable_total). */
export type UnavailableCause = 'unreachable' | 'connection_lost' | 'shutdown' | 'timeout';

/** SQLSTATEs: the server is stopping, crashed or refuses sessions; 57014 is our statement bound. */
const STATES: Record<string, UnavailableCause> = {
  '57P01': 'shutdown', // admin_shutdown (also pg_terminate_backend)
  '57P02': 'shutdown', // crash_shutdown
  '57P03': 'shutdown', // cannot_connect_now (starting up, recovering)
  '53300': 'unreachable', // too_many_connections
  '57014': 'timeout', // query_canceled: DATABASE_STATEMENT_TIMEOUT_MS (or a bound of its own) ran out
};

/** System errors of the socket. */
const SYSTEM: Record<string, UnavailableCause> = {
  ECONNREFUSED: 'unreachable',
  EHOSTUNREACH: 'unreachable',
  ENETUNREACH: 'unreachable',
  ENOTFOUND: 'unreachable',
  EAI_AGAIN: 'unreachable',
  ECONNRESET: 'connection_lost',
  EPIPE: 'connection_lost',
  ECONNABORTED: 'connection_lost',
  ETIMEDOUT: 'timeout',
};

/** The code this project gives a connection it destroyed because an answer took longer than its bound. */
export const READ_TIMEOUT_CODE = 'DATABASE_READ_TIMEOUT';

/** The pg driver's and pg-pool's own errors, which have no code. */
const MESSAGES: [RegExp, UnavailableCause][] = [
  [/^timeout exceeded when trying to connect$/, 'timeout'], // pool acquisition bound
  [/^Connection terminated due to connection timeout$/, 'timeout'], // connect bound (pool)
  [/^timeout expired$/, 'timeout'], // connect bound (a client of its own)
  [/^Query read timeout$/, 'timeout'],
  [/^Connection terminated( unexpectedly)?$/, 'connection_lost'],
  [/^Client has encountered a connection error and is not queryable$/, 'connection_lost'],
  [/^Client was closed and is not queryable$/, 'connection_lost'],
];

function own(error: unknown): UnavailableCause | null {
  if (typeof error !== 'object' || error === null) return null;
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (code === READ_TIMEOUT_CODE) return 'timeout';
  if (typeof code === 'string') {
    if (STATES[code]) return STATES[code];
    if (SYSTEM[code]) return SYSTEM[code];
    if (/^08[0-9A-Z]{3}$/.test(code)) return 'connection_lost'; // class 08: connection exception
  }
  if (typeof message === 'string') for (const [pattern, cause] of MESSAGES) if (pattern.test(message)) return cause;
  return null;
}

/**
 * The cause when `error` (or what it wraps: TypeORM's `driverError`, an `AggregateError`'s
 * errors, a `cause`) says the database is unavailable; null for any other failure.
 */
export function databaseUnavailable(error: unknown, depth = 0): UnavailableCause | null {
  const cause = own(error);
  if (cause || depth > 3 || typeof error !== 'object' || error === null) return cause;
  const e = error as { driverError?: unknown; cause?: unknown; errors?: unknown };
  for (const inner of [e.driverError, e.cause, ...(Array.isArray(e.errors) ? e.errors : [])]) {
    const found = inner === undefined ? null : databaseUnavailable(inner, depth + 1);
    if (found) return found;
  }
  return null;
}

/** A connection lost under a statement: the statement may not have run (never a timeout, which may still be running). */
export function connectionLost(error: unknown): boolean {
  const cause = databaseUnavailable(error);
  return cause === 'connection_lost' || cause === 'shutdown';
}
