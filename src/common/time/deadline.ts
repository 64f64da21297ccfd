/** Raised by `withDeadline` when the work has not settled in time. */
export class DeadlineError extends Error {
  constructor(what: string, ms: number) {
    super(`${what} did not answer within ${ms} ms`);
  }
}

/** `work`, or a DeadlineError once `ms` have passed (the work itself is not cancelled). */
export function withDeadline<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new DeadlineError(what, ms)), ms)));
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}
