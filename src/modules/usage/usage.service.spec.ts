import fc from 'fast-check';
import { splitWindow } from 'src/modules/usage/usage.service';

const MINUTE = 60_000;
const HOUR = 3_600_000;

describe('splitWindow', () => {
  it('covers the window exactly with whole hours, whole minutes and under a minute of raw time at each edge', () => {
    const instant = fc.oneof(
      fc.integer({ min: 0, max: 40 * 24 * HOUR }),
      fc.integer({ min: 0, max: 40 * 24 }).map((h) => h * HOUR),
      fc.integer({ min: 0, max: 40 * 24 * 60 }).map((m) => m * MINUTE),
    );
    fc.assert(
      fc.property(instant, instant, fc.integer({ min: 1_700_000_000_000, max: 1_800_000_000_000 }), (a, b, base) => {
        fc.pre(a !== b);
        const from = new Date(base + Math.min(a, b));
        const to = new Date(base + Math.max(a, b));
        const { hours, minutes, tailHour } = splitWindow({ from, to });
        const t = (d: Date) => d.getTime();
        // from <= minutes.from <= hours.from <= hours.to <= minutes.to <= to: the five ranges tile [from, to).
        expect(t(from) <= t(minutes.from) && t(minutes.from) <= t(hours.from) && t(hours.from) <= t(hours.to)).toBe(true);
        expect(t(hours.to) <= t(minutes.to) && t(minutes.to) <= t(to)).toBe(true);
        if (t(hours.from) < t(hours.to)) expect([t(hours.from) % HOUR, t(hours.to) % HOUR]).toEqual([0, 0]);
        // The tail hour: the window holds the start of to's hour, and [hours.to, to) is its part of that hour.
        expect(tailHour).toBe(t(to) % HOUR !== 0 && t(from) <= Math.floor(t(to) / HOUR) * HOUR);
        if (tailHour) expect(t(hours.to)).toBe(Math.floor(t(to) / HOUR) * HOUR);
        if (t(minutes.from) < t(minutes.to)) {
          expect([t(minutes.from) % MINUTE, t(minutes.to) % MINUTE]).toEqual([0, 0]);
          expect([t(minutes.from) - t(from), t(to) - t(minutes.to)].every((raw) => raw < MINUTE)).toBe(true);
          // The minute ranges lie inside the edge hours.
          if (t(hours.from) < t(hours.to)) expect(t(hours.from) - t(minutes.from) < HOUR && t(minutes.to) - t(hours.to) < HOUR).toBe(true);
        } else {
          expect(t(to) - t(from)).toBeLessThan(2 * MINUTE);
        }
      }),
      { numRuns: 2000 },
    );
  });
});
