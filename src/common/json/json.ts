/** A parsed JSON object (not null, not an array): the shape every hand-read document is checked against first. */
export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
