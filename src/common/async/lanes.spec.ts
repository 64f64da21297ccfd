import { inLanes } from 'src/common/async/lanes';

describe('inLanes', () => {
  it('runs every index once, never more than `lanes` at a time', async () => {
    let running = 0;
    let most = 0;
    const done: number[] = [];
    await inLanes(7, 3, async (i) => {
      most = Math.max(most, ++running);
      await new Promise((resolve) => setTimeout(resolve, 2));
      done.push(i);
      running--;
    });
    expect([...done].sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(most).toBe(3);
  });

  it('starts nothing after the first failure and throws it once every lane has stopped', async () => {
    const started: number[] = [];
    let finished = 0;
    const run = inLanes(10, 2, async (i) => {
      started.push(i);
      await new Promise((resolve) => setTimeout(resolve, i === 0 ? 1 : 5));
      finished++;
      if (i === 0) throw new Error('first');
    });
    await expect(run).rejects.toThrow('first');
    expect(started).toEqual([0, 1]);
    expect(finished).toBe(2);
  });

  it('does nothing for no indexes', async () => {
    await expect(inLanes(0, 2, () => Promise.reject(new Error('never')))).resolves.toBeUndefined();
  });
});
