/**
 * Text PostgreSQL cannot store (a NUL, SQLSTATE 22021) or UTF-8 cannot encode (a lone UTF-16
 * surrogate, which `encodeURI`, `Buffer` and every hash would refuse or mangle) is refused at the
 * edge, before any handler: no such text reaches SQL, a digest or a sealing call.
 */
export function isStorableText(text: string): boolean {
  return !text.includes('\u0000') && !LONE_SURROGATE.test(text);
}
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Where in a JSON value (a string, or an object key, at any depth) the first unstorable text is, or null. */
export function unstorableAt(value: unknown, loc: (string | number)[] = []): (string | number)[] | null {
  if (typeof value === 'string') return isStorableText(value) ? null : loc;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = unstorableAt(value[i], [...loc, i]);
      if (found) return found;
    }
  } else if (value !== null && typeof value === 'object') {
    for (const [key, inner] of Object.entries(value)) {
      if (!isStorableText(key)) return [...loc, key];
      const found = unstorableAt(inner, [...loc, key]);
      if (found) return found;
    }
  }
  return null;
}

export const UNSTORABLE_TEXT = 'text must not contain NUL characters or unpaired surrogates';
