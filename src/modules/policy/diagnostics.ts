import type { DetailedError, ValidationAnswer } from '@cedar-policy/cedar-wasm/nodejs';

export interface Diagnostic {
  severity: 'error' | 'warning';
  /** One of DIAGNOSTIC_CODES: the compiler itself names no codes. */
  code: string;
  message: string;
  /** 1-based line of the first source location, when the compiler gives one. */
  line?: number;
  /** 1-based column in Unicode characters (code points) within that line. */
  column?: number;
}

export interface CompileResult {
  /** True when no diagnostic is an error (warnings do not block a publish). */
  valid: boolean;
  diagnostics: Diagnostic[];
}

/** The closed, stable code vocabulary of diagnostics. */
export const DIAGNOSTIC_CODES = {
  parse: 'parse_error',
  validation: 'validation_error',
  warning: 'validation_warning',
} as const;

/** Most diagnostics one compile reports; the rest are dropped (the first ones are what an operator fixes first). */
export const MAX_DIAGNOSTICS = 100;

/** Maps byte offsets of a UTF-8 source (what the compiler reports) to 1-based lines and columns. */
export class SourcePositions {
  private readonly bytes: Buffer;
  private readonly lineStarts: number[] = [0];

  constructor(source: string) {
    this.bytes = Buffer.from(source, 'utf8');
    for (let i = 0; i < this.bytes.length; i++) if (this.bytes[i] === 0x0a) this.lineStarts.push(i + 1);
  }

  at(offset: number): { line: number; column: number } {
    const at = Math.max(0, Math.min(offset, this.bytes.length));
    let lo = 0;
    let hi = this.lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.lineStarts[mid] <= at) lo = mid;
      else hi = mid - 1;
    }
    const before = this.bytes.subarray(this.lineStarts[lo], at).toString('utf8');
    return { line: lo + 1, column: [...before].length + 1 };
  }
}

function toDiagnostic(positions: SourcePositions, error: DetailedError, severity: Diagnostic['severity'], code: string): Diagnostic {
  const location = error.sourceLocations?.[0];
  let message = error.message;
  if (location?.label) message += ` (${location.label})`;
  if (error.help) message += `; ${error.help}`;
  const diagnostic: Diagnostic = { severity, code, message };
  if (location) Object.assign(diagnostic, positions.at(location.start));
  return diagnostic;
}

/** The diagnostics of one strict validation answer of the compiler against the gateway schema. */
export function toCompileResult(source: string, answer: ValidationAnswer): CompileResult {
  const positions = new SourcePositions(source);
  const diagnostics: Diagnostic[] =
    answer.type === 'failure'
      ? [
          ...answer.errors.map((e) => toDiagnostic(positions, e, 'error', DIAGNOSTIC_CODES.parse)),
          ...answer.warnings.map((e) => toDiagnostic(positions, e, 'warning', DIAGNOSTIC_CODES.warning)),
        ]
      : [
          ...answer.validationErrors.map((e) => toDiagnostic(positions, e.error, 'error', DIAGNOSTIC_CODES.validation)),
          ...answer.validationWarnings.map((e) => toDiagnostic(positions, e.error, 'warning', DIAGNOSTIC_CODES.warning)),
          ...answer.otherWarnings.map((e) => toDiagnostic(positions, e, 'warning', DIAGNOSTIC_CODES.warning)),
        ];
  return { valid: !diagnostics.some((d) => d.severity === 'error'), diagnostics: diagnostics.slice(0, MAX_DIAGNOSTICS) };
}
