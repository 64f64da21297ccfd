const BEARER = /^bearer[ \t]+(\S+)[ \t]*$/i;

/** The credential of a `Bearer` authorization header, or null for a missing header or another scheme. */
export function bearer(header: unknown): string | null {
  if (typeof header !== 'string') return null;
  const match = BEARER.exec(header);
  return match ? match[1] : null;
}

/** The `Bearer` credential of a request (Express and Fastify both expose `headers`). */
export function bearerOf(request: { headers: Record<string, unknown> }): string | null {
  return bearer(request.headers.authorization);
}
