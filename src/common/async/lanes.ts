/**
 * Runs `work` on the indexes `0 .. count - 1` in order, at most `lanes` at once. At the first
 * failure no further index is started; once every lane has stopped, that failure is thrown.
 */
export async function inLanes(count: number, lanes: number, work: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const failures: unknown[] = [];
  const lane = async () => {
    while (failures.length === 0 && next < count) {
      const index = next++;
      try {
        await work(index);
      } catch (error) {
        failures.push(error);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(lanes, count) }, lane));
  if (failures.length > 0) throw failures[0];
}
