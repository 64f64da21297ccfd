/** Longest model pattern, upstream model name or pricebook model key. */
export const MAX_MODEL_NAME = 256;

const FORBIDDEN = /[\s\u0000-\u001f\u007f-\u009f]/u;

/**
 * A client model-name pattern (model connections and pricebook keys): 1-256 characters, no
 * whitespace or control characters, at most one `*`, and only as the whole pattern, a prefix or
 * a suffix. Returns what is wrong, or null.
 */
export function modelPatternProblem(pattern: string): string | null {
  if (pattern.length === 0 || pattern.length > MAX_MODEL_NAME || FORBIDDEN.test(pattern)) {
    return `must be 1-${MAX_MODEL_NAME} characters without whitespace or control characters`;
  }
  const stars = pattern.split('*').length - 1;
  if (stars > 1 || (stars === 1 && !pattern.startsWith('*') && !pattern.endsWith('*'))) {
    return 'may contain one * only as the whole pattern, a prefix or a suffix';
  }
  return null;
}

/** An upstream model name: like a pattern, but with no `*` at all. */
export function upstreamModelProblem(model: string): string | null {
  if (model.length === 0 || model.length > MAX_MODEL_NAME || FORBIDDEN.test(model)) {
    return `must be 1-${MAX_MODEL_NAME} characters without whitespace or control characters`;
  }
  return model.includes('*') ? 'must not contain *' : null;
}
