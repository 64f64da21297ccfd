import { formatTime, parseUtcTimestamp, parseWindow } from 'src/common/time/time';

describe('time', () => {
  it('formats in UTC with a Z suffix', () => {
    expect(formatTime(new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 6)))).toBe('2026-01-02T03:04:05.006Z');
    expect(formatTime(null)).toBeNull();
  });

  it('parses UTC RFC 3339 only', () => {
    expect(parseUtcTimestamp('2026-01-02T03:04:05Z')?.toISOString()).toBe('2026-01-02T03:04:05.000Z');
    expect(parseUtcTimestamp('2026-01-02T03:04:05.123456+00:00')?.toISOString()).toBe('2026-01-02T03:04:05.123Z');
    expect(parseUtcTimestamp('2026-01-02t03:04:05.1z')?.toISOString()).toBe('2026-01-02T03:04:05.100Z');
    expect(parseUtcTimestamp('2024-02-29T23:59:59.999999999-00:00')?.toISOString()).toBe('2024-02-29T23:59:59.999Z');
    for (const bad of [
      '2026-01-02',
      '2026-01-02T03:04:05',
      '2026-01-02T03:04:05+02:00',
      '2026-01-02T03:04:05+00:01',
      '2026-02-30T00:00:00Z',
      '2025-02-29T00:00:00Z',
      '2026-13-01T00:00:00Z',
      '2026-01-02T24:00:00Z',
      '2026-01-02T03:60:00Z',
      '2026-01-02T03:04:60Z',
      '2026-01-02T03:04:05.Z',
      '2026-01-02T03:04:05.1234567890Z',
      '2026-01-02T03:04:05ZZ',
      '2026-1-02T03:04:05Z',
      '2026-01-02 03:04:05Z',
      '0099-01-02T03:04:05Z',
      'now',
      ' 2026-01-02T03:04:05Z',
    ]) {
      expect(parseUtcTimestamp(bad)).toBeNull();
    }
  });

  it('parses half-open windows: both or neither, from strictly before to, at most 64 characters', () => {
    expect(parseWindow(undefined, undefined)).toEqual({ ok: true, window: null });
    expect(parseWindow('2026-01-01T00:00:00Z', undefined)).toEqual({ ok: false, reason: 'unpaired', field: 'to' });
    expect(parseWindow(undefined, '2026-01-01T00:00:00Z')).toEqual({ ok: false, reason: 'unpaired', field: 'from' });
    expect(parseWindow('2026-01-02T00:00:00Z', '2026-01-01T00:00:00Z')).toMatchObject({ ok: false, reason: 'invalid' });
    expect(parseWindow('2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')).toMatchObject({ ok: false, reason: 'invalid' });
    expect(parseWindow(`2026-01-01T00:00:00.${'0'.repeat(60)}Z`, '2026-01-02T00:00:00Z')).toMatchObject({ ok: false, reason: 'invalid', field: 'from' });
    const ok = parseWindow('2026-01-01T00:00:00Z', '2026-01-01T00:00:00.001Z');
    expect(ok.ok && ok.window?.to.toISOString()).toBe('2026-01-01T00:00:00.001Z');
  });
});
