import { shardWorkspaces } from 'src/modules/streams/sharded-projection';

describe('shardWorkspaces', () => {
  const groups = (sizes: Record<string, number>) => new Map(Object.entries(sizes).map(([ws, n]) => [ws, Array.from({ length: n }, (_, i) => `${ws}-${i}`)]));

  it('never splits a workspace and keeps every entry once', () => {
    const shards = shardWorkspaces(groups({ a: 5, b: 1, c: 3, d: 2, e: 4 }), 2);
    expect(shards).toHaveLength(2);
    const workspaces = shards.flatMap((shard) => shard.map(([ws]) => ws));
    expect(workspaces.sort()).toEqual(['a', 'b', 'c', 'd', 'e']);
    for (const shard of shards) for (const [ws, entries] of shard) expect(entries.every((e) => e.startsWith(`${ws}-`))).toBe(true);
  });

  it('balances entries across shards, largest workspace first', () => {
    const sizes = shardWorkspaces(groups({ a: 5, b: 1, c: 3, d: 2, e: 4 }), 3).map((shard) => shard.reduce((n, [, entries]) => n + entries.length, 0));
    expect(sizes.sort()).toEqual([5, 5, 5]);
  });

  it('makes no more shards than workspaces, and none for an empty batch', () => {
    expect(shardWorkspaces(groups({ a: 2 }), 3)).toEqual([[['a', ['a-0', 'a-1']]]]);
    expect(shardWorkspaces(new Map(), 3)).toEqual([]);
  });
});
