import { loadConfig } from 'src/config/config';
import { backoffMs, jitterSecond, RefreshJob } from 'src/modules/connections/refresh.job';

describe('refresh job schedule', () => {
  it('derives one jitter second per deployment, the same on every replica', () => {
    expect(jitterSecond('ob')).toBe(jitterSecond('ob'));
    const seconds = new Set(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'].map(jitterSecond));
    expect([...seconds].every((s) => Number.isInteger(s) && s >= 0 && s < 60)).toBe(true);
    expect(seconds.size).toBeGreaterThan(1);
  });

  it('backs off exponentially from one minute to at most one hour', () => {
    expect([1, 2, 3, 4].map(backoffMs)).toEqual([60_000, 120_000, 240_000, 480_000]);
    expect(backoffMs(30)).toBe(3_600_000);
  });

  it('never runs at start, runs once at the jitter second of a minute, and once per minute', async () => {
    const config = loadConfig({ REDIS_PREFIX: 'deployment-x' });
    const job = new RefreshJob(null as never, null as never, null as never, null as never, null as never, null as never, null as never, null as never, config);
    const runs = jest.spyOn(job, 'runOnce').mockResolvedValue({ refreshed: 0, deferred: 0, refused: 0, superseded: 0 });
    const second = jitterSecond('deployment-x');
    jest.useFakeTimers({ now: Date.UTC(2030, 0, 1, 12, 0, (second + 1) % 60) });
    try {
      await job.tick();
      expect(runs).not.toHaveBeenCalled();
      jest.setSystemTime(Date.UTC(2030, 0, 1, 12, 1, second));
      await job.tick();
      await job.tick();
      expect(runs).toHaveBeenCalledTimes(1);
      jest.setSystemTime(Date.UTC(2030, 0, 1, 12, 2, second));
      await job.tick();
      expect(runs).toHaveBeenCalledTimes(2);
    } finally {
      jest.useRealTimers();
    }
  });
});
