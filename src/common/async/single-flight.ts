/**
 * Wraps a periodic pass so that a tick arriving while the previous pass still runs on this replica
 * is skipped (a pass over many rows may outlast its interval); the wrapper resolves once `pass` has
 * settled, and never rejects: a failure is handed to `onError`.
 */
export function singleFlight(pass: () => Promise<unknown>, onError: (error: unknown) => void): () => Promise<void> {
  let running = false;
  return async () => {
    if (running) return;
    running = true;
    try {
      await pass();
    } catch (error) {
      onError(error);
    } finally {
      running = false;
    }
  };
}
