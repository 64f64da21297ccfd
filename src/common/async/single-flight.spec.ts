import { singleFlight } from 'src/common/async/single-flight';

describe('singleFlight', () => {
  it('skips a tick while the previous pass runs, and runs again once it settled', async () => {
    let release!: () => void;
    let calls = 0;
    const tick = singleFlight(
      () => {
        calls += 1;
        return new Promise<void>((resolve) => (release = resolve));
      },
      () => undefined,
    );
    const first = tick();
    await tick();
    expect(calls).toBe(1);
    release();
    await first;
    const third = tick();
    expect(calls).toBe(2);
    release();
    await third;
  });

  it('hands a failure to onError and is free for the next tick', async () => {
    const errors: unknown[] = [];
    let calls = 0;
    const tick = singleFlight(
      async () => {
        calls += 1;
        throw new Error(`pass ${calls}`);
      },
      (error) => errors.push(error),
    );
    await tick();
    await tick();
    expect(calls).toBe(2);
    expect(errors.map((e) => (e as Error).message)).toEqual(['pass 1', 'pass 2']);
  });
});
