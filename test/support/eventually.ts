/** Polls `check` until it stops throwing (a background job settling); rethrows the last failure after `attempts`. */
export async function eventually<T>(check: () => Promise<T>, attempts = 100, pauseMs = 100): Promise<T> {
  let last: unknown;
  for (let i = 0; i < attempts; i++) {
    try {
      return await check();
    } catch (error) {
      last = error;
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
  }
  throw last;
}
