/**
 * Text PostgreSQL cannot store (a NUL, SQLSTATE 22021) or UTF-8 cannot encode (a lone UTF-16
 * surrogate, which `encodeURI`, `Buffer` and every hash would refuse or mangle) is refused at the
 * edge, before any handler: no such text reaches SQL, a digest or a sealing call.
 */
export function isStorableText(text: string): boolean {
  // `isWellFormed` (node 20+, ES2024): false exactly when the string holds an unpaired surrogate.
  return !text.includes('\u0000') && (text as string & { isWellFormed(): boolean }).isWellFormed();
}

export const UNSTORABLE_TEXT = 'text must not contain NUL characters or unpaired surrogates';

/**
 * The deepest nesting of arrays and objects a JSON body may have. Every walk over a body (class-
 * transformer, class-validator, canonical JSON, sanitizers) recurses, and a 1 MiB body can nest
 * 500,000 levels: past this the request is refused before any of them runs. The deepest document
 * this API takes (a Worker revision) nests under 10.
 */
export const MAX_JSON_DEPTH = 64;
export const TOO_DEEP = `value must not nest arrays and objects more than ${MAX_JSON_DEPTH} levels deep`;

export interface InputFault {
  /** The path to the offending string, object key or container (`[]` for the value itself). */
  loc: (string | number)[];
  kind: 'text' | 'depth';
}

/**
 * The first thing in a JSON value no handler can take: unstorable text (a string or an object key,
 * at any depth) or nesting past MAX_JSON_DEPTH. Recursion is bounded by that depth; the path is
 * built only when something is found.
 */
export function inputFault(value: unknown, depth = 0): InputFault | null {
  if (typeof value === 'string') return isStorableText(value) ? null : { loc: [], kind: 'text' };
  if (value === null || typeof value !== 'object') return null;
  if (depth === MAX_JSON_DEPTH) return { loc: [], kind: 'depth' };
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = inputFault(value[i], depth + 1);
      if (found) return (found.loc.unshift(i), found);
    }
    return null;
  }
  for (const key of Object.keys(value)) {
    if (!isStorableText(key)) return { loc: [key], kind: 'text' };
    const found = inputFault((value as Record<string, unknown>)[key], depth + 1);
    if (found) return (found.loc.unshift(key), found);
  }
  return null;
}
