/** One policy statement of a Cedar source, where it starts and the id it is known by. */
export interface PolicyStatement {
  /** The `@id("...")` annotation when present (and not already taken), else Cedar's positional id. */
  id: string;
  /** Cedar's own id for a policy set given as text: `policy` and the 0-based position. */
  cedarId: string;
  /** The statement from its first annotation or effect through its `;`. */
  text: string;
  /** 1-based line and column (in Unicode characters) of the statement's first character. */
  line: number;
  column: number;
}

const ANNOTATIONS = /^(?:@[A-Za-z_][A-Za-z0-9_]*\s*(?:\(\s*"(?:[^"\\]|\\.)*"\s*\))?\s*)*/;
const ID_ANNOTATION = /@id\s*\(\s*"((?:[^"\\]|\\.)*)"\s*\)/;

function annotatedId(text: string): string | null {
  const found = ID_ANNOTATION.exec(ANNOTATIONS.exec(text)![0]);
  return found ? found[1].replace(/\\(.)/g, '$1') : null;
}

/**
 * Splits a Cedar source into its policy statements, in order, without a parser: a statement ends
 * at a `;` outside a string literal and a `//` comment (Cedar has no other use for `;`), and starts
 * at the next character that is neither white space nor in a comment. For a source that compiles
 * the statements are exactly Cedar's policies, `policy0`, `policy1`, ...; trailing text with no
 * `;` (a source that does not compile) is one last statement.
 */
export function splitPolicies(source: string): PolicyStatement[] {
  const statements: PolicyStatement[] = [];
  const taken = new Set<string>();
  let start = -1;
  let startLine = 0;
  let startColumn = 0;
  let line = 1;
  let column = 1;
  let inString = false;
  let inComment = false;
  const close = (end: number) => {
    const text = source.slice(start, end);
    const cedarId = `policy${statements.length}`;
    const annotated = annotatedId(text);
    const id = annotated !== null && !taken.has(annotated) ? annotated : cedarId;
    taken.add(id);
    statements.push({ id, cedarId, text, line: startLine, column: startColumn });
    start = -1;
  };
  for (let i = 0; i < source.length; i++) {
    const ch = source[i];
    if (inComment) {
      if (ch === '\n') inComment = false;
    } else if (inString) {
      if (ch === '\\') {
        i++;
        column++;
      } else if (ch === '"') inString = false;
    } else if (ch === '/' && source[i + 1] === '/') {
      inComment = true;
    } else if (!/\s/.test(ch)) {
      if (start < 0) [start, startLine, startColumn] = [i, line, column];
      if (ch === '"') inString = true;
      else if (ch === ';') close(i + 1);
    }
    if (ch === '\n') [line, column] = [line + 1, 1];
    // A surrogate pair is one character: count it at its second half.
    else if (!(ch >= '\ud800' && ch <= '\udbff')) column++;
  }
  if (start >= 0) close(source.trimEnd().length);
  return statements;
}
