import { DIAGNOSTIC_CODES, MAX_DIAGNOSTICS, SourcePositions, toCompileResult } from 'src/modules/policy/diagnostics';

const error = (start: number, extra: object = {}) => ({ message: 'bad', help: null, code: null, url: null, severity: null, sourceLocations: [{ label: null, start, end: start }], ...extra });

describe('SourcePositions', () => {
  it('maps byte offsets to 1-based lines and columns', () => {
    const p = new SourcePositions('ab\ncd\n\nef');
    expect(p.at(0)).toEqual({ line: 1, column: 1 });
    expect(p.at(1)).toEqual({ line: 1, column: 2 });
    expect(p.at(2)).toEqual({ line: 1, column: 3 });
    expect(p.at(3)).toEqual({ line: 2, column: 1 });
    expect(p.at(6)).toEqual({ line: 3, column: 1 });
    expect(p.at(8)).toEqual({ line: 4, column: 2 });
  });

  it('counts columns in characters, not UTF-8 bytes or UTF-16 units', () => {
    // "é" is 2 bytes, "😀" 4 bytes (2 UTF-16 units): the byte after them is column 4.
    const p = new SourcePositions('x\né😀y');
    expect(p.at(2 + 2 + 4)).toEqual({ line: 2, column: 3 });
    expect(p.at(2 + 2 + 4 + 1)).toEqual({ line: 2, column: 4 });
  });

  it('clamps offsets outside the source', () => {
    const p = new SourcePositions('ab\nc');
    expect(p.at(-5)).toEqual({ line: 1, column: 1 });
    expect(p.at(99)).toEqual({ line: 2, column: 2 });
  });
});

describe('toCompileResult', () => {
  it('turns a parse failure into error diagnostics with the label and help in the message', () => {
    const result = toCompileResult('permit(', {
      type: 'failure',
      errors: [error(7, { message: 'unexpected end of input', help: 'close it', sourceLocations: [{ label: 'expected `)`', start: 7, end: 7 }] })],
      warnings: [],
    });
    expect(result).toEqual({
      valid: false,
      diagnostics: [{ severity: 'error', code: DIAGNOSTIC_CODES.parse, message: 'unexpected end of input (expected `)`); close it', line: 1, column: 8 }],
    });
  });

  it('keeps warnings without making the draft invalid, and omits line and column without a location', () => {
    const result = toCompileResult('permit (principal, action, resource);', {
      type: 'success',
      validationErrors: [],
      validationWarnings: [{ policyId: 'policy0', error: error(0) }],
      otherWarnings: [{ ...error(0), sourceLocations: [] }],
    });
    expect(result.valid).toBe(true);
    expect(result.diagnostics).toEqual([
      { severity: 'warning', code: DIAGNOSTIC_CODES.warning, message: 'bad', line: 1, column: 1 },
      { severity: 'warning', code: DIAGNOSTIC_CODES.warning, message: 'bad' },
    ]);
  });

  it(`reports at most ${MAX_DIAGNOSTICS} diagnostics but stays invalid`, () => {
    const errors = Array.from({ length: MAX_DIAGNOSTICS + 5 }, () => ({ policyId: 'p', error: error(0) }));
    const result = toCompileResult('x', { type: 'success', validationErrors: errors, validationWarnings: [], otherWarnings: [] });
    expect(result.valid).toBe(false);
    expect(result.diagnostics).toHaveLength(MAX_DIAGNOSTICS);
  });
});
