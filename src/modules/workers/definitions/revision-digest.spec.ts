import { createHash } from 'node:crypto';
import { revisionDigest } from 'src/modules/workers/definitions/revision-digest';

/** An independent canonical form: recursive, written without the project's helper. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

describe('revision digest', () => {
  const parts = {
    ui_actions: ['browser.navigate'],
    permission_preset: 'safe_writes',
    limits: { run_timeout_seconds: 600, approval_window_seconds: 900, nested: { z: 1, a: [{ y: 2, b: 'é' }] } },
    execution_mode: 'balanced',
    body: { instructions: 'Review PRs.', environment_requests: [{ environment_class: 'code' }] },
    allowed_capabilities: ['cap.github.pull_request.read'],
  };

  it('is sha256 over the canonical JSON of the six parts', () => {
    const expected = `sha256:${createHash('sha256').update(canonical(parts), 'utf8').digest('hex')}`;
    expect(revisionDigest(parts)).toBe(expected);
  });

  it('matches a value computed by hand for a fixed input', () => {
    const text =
      '{"allowed_capabilities":[],"body":{"instructions":"x"},"execution_mode":"safe","limits":{"a":1,"b":2},"permission_preset":"read_only","ui_actions":[]}';
    const expected = `sha256:${createHash('sha256').update(text).digest('hex')}`;
    expect(
      revisionDigest({ ui_actions: [], permission_preset: 'read_only', limits: { b: 2, a: 1 }, execution_mode: 'safe', body: { instructions: 'x' }, allowed_capabilities: [] }),
    ).toBe(expected);
  });

  it('changes when any part changes and ignores key order', () => {
    const base = revisionDigest(parts);
    expect(revisionDigest({ ...parts, execution_mode: 'safe' })).not.toBe(base);
    expect(revisionDigest({ ...parts, body: { environment_requests: parts.body.environment_requests, instructions: 'Review PRs.' } })).toBe(base);
  });
});
