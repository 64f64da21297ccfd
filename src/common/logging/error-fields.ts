/**
 * What a log line may say of an unexpected error: its kind and its driver's code (a SQLSTATE, a
 * system error code), never its message. A database error quotes the values it refused, and a
 * job's values can be stream entries or credential envelopes.
 */
export function errorFields(error: unknown): { error: string; code?: string | number } {
  const code = (error as { code?: unknown } | null)?.code;
  return {
    error: error instanceof Error ? error.constructor.name : typeof error,
    ...(typeof code === 'string' || typeof code === 'number' ? { code } : {}),
  };
}
