/**
 * Text PostgreSQL cannot store (a NUL, SQLSTATE 22021) or UTF-8 cannot encode (a lone UTF-16
 * surrogate, which `encodeURI`, `Buffer` and every hash would refuse or mangle) is refused at the
 * edge, before any handler: no such text reaches SQL, a digest or a sealing call.
 */
export function isStorableText(text: string): boolean {
  // `isWellFormed` (node 20+, ES2024): false exactly when the string holds an unpaired surrogate.
  return !text.includes('\u0000') && (text as string & { isWellFormed(): boolean }).isWellFormed();
}

/**
 * Where in a JSON value (a string, or an object key, at any depth) the first unstorable text is:
 * its path (`[]` for the value itself), or null. The path is built only when something is found.
 */
export function unstorableAt(value: unknown): (string | number)[] | null {
  if (typeof value === 'string') return isStorableText(value) ? null : [];
  if (value === null || typeof value !== 'object') return null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = unstorableAt(value[i]);
      if (found) return (found.unshift(i), found);
    }
    return null;
  }
  for (const key of Object.keys(value)) {
    if (!isStorableText(key)) return [key];
    const found = unstorableAt((value as Record<string, unknown>)[key]);
    if (found) return (found.unshift(key), found);
  }
  return null;
}

export const UNSTORABLE_TEXT = 'text must not contain NUL characters or unpaired surrogates';
