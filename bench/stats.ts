/** The `p`th percentile of `samples` (nearest rank, not interpolated); `median` is the 50th. */
export const percentile = (samples: number[], p: number) => [...samples].sort((a, b) => a - b)[Math.min(samples.length - 1, Math.floor((p / 100) * samples.length))];

export const median = (samples: number[]) => percentile(samples, 50);
