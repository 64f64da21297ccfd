import { Injectable, Logger } from '@nestjs/common';
import { errorFields } from 'src/common/logging/error-fields';
import { Transactions } from 'src/database/transactions';
import { Redis } from 'src/database/redis.module';
import { ReadModelPartitions } from 'src/modules/streams/read-model-partitions';
import { monthsOf, ParsedEntry, PROJECT_SHARDS, StreamProjector } from 'src/modules/streams/stream-projector';
import { StreamReader } from 'src/modules/streams/stream-reader';

/** A batch read and parsed, its malformed entries already parked, waiting to be projected. */
export interface AdmittedBatch {
  projector: StreamProjector<unknown>;
  redis: Redis;
  key: string;
  reclaimed: number;
  fresh: number;
  parked: number;
  bytes: number;
  /** Whether the pass stopped at its entry or byte limit (more may be waiting). */
  full: boolean;
  valid: ParsedEntry<unknown>[];
}

/** PostgreSQL refused a row because no partition of the table covers it (23514 from tuple routing). */
function isMissingPartition(error: unknown): boolean {
  const e = error as { driverError?: { code?: string; message?: string } };
  return e?.driverError?.code === '23514' && /^no partition of relation/.test(e.driverError.message ?? '');
}

/**
 * Deals whole workspaces to at most `count` shards, largest first onto the lightest shard, so
 * the shards carry about the same number of entries and never share a workspace.
 */
export function shardWorkspaces<E>(groups: Map<string, E[]>, count: number): [string, E[]][][] {
  const shards = Array.from({ length: Math.max(1, Math.min(count, groups.size)) }, () => ({ size: 0, groups: [] as [string, E[]][] }));
  for (const group of [...groups].sort((a, b) => b[1].length - a[1].length || (a[0] < b[0] ? -1 : 1))) {
    const lightest = shards.reduce((min, s) => (s.size < min.size ? s : min));
    lightest.groups.push(group);
    lightest.size += group[1].length;
  }
  return shards.filter((s) => s.groups.length > 0).map((s) => s.groups);
}

/**
 * Projects an admitted batch in concurrent shard transactions and acknowledges what committed.
 * Workspaces are dealt to shards, each in its own transaction: shards share no row of any read
 * model table (every key starts with the workspace), so they never wait on each other. A shard
 * that fails falls back to one transaction per workspace, so one failing workspace neither blocks
 * the others nor loses its entries (they stay pending and are reclaimed later).
 */
@Injectable()
export class ShardedProjection {
  private readonly logger = new Logger('streams');

  constructor(
    private readonly transactions: Transactions,
    private readonly partitions: ReadModelPartitions,
    private readonly reader: StreamReader,
  ) {}

  /** Projects a parsed batch and acknowledges what was committed: the entries committed, and those that rolled back. */
  async commit(batch: AdmittedBatch, shards = PROJECT_SHARDS): Promise<{ committed: number; failed: number }> {
    const { projector, redis, key, valid } = batch;
    for (const at of monthsOf(valid)) await this.partitions.ensure(projector.partitioned, at);
    const groups = new Map<string, ParsedEntry<unknown>[]>();
    for (const e of valid) {
      const list = groups.get(e.workspaceId);
      if (list) list.push(e);
      else groups.set(e.workspaceId, [e]);
    }
    const outcomes = await Promise.all(shardWorkspaces(groups, shards).map((shard) => this.projectShard(projector, shard)));
    const committed = outcomes.flatMap((o) => o.committed);
    const failed = outcomes.reduce((n, o) => n + o.failed, 0);
    if (committed.length > 0) await this.reader.ack(redis, key, committed);
    return { committed: committed.length, failed };
  }

  /** One shard in one transaction; if that fails (and it holds several workspaces), each workspace alone. */
  private async projectShard(projector: StreamProjector<unknown>, shard: [string, ParsedEntry<unknown>[]][]): Promise<{ committed: string[]; failed: number }> {
    const committed: string[] = [];
    let failed = 0;
    if (shard.length > 1 && (await this.project(projector, shard.flatMap(([, entries]) => entries), null))) {
      for (const [, entries] of shard) for (const e of entries) committed.push(e.id);
      return { committed, failed };
    }
    for (const [workspaceId, entries] of shard) {
      if (await this.project(projector, entries, workspaceId)) for (const e of entries) committed.push(e.id);
      else failed += entries.length;
    }
    return { committed, failed };
  }

  /**
   * Projects `entries` in one transaction. A partition the cache listed but that is gone (dropped
   * under this process, e.g. by another replica's retention) fails the transaction with a routing
   * error: the months of the entries are created again and the transaction retried once.
   */
  private async project(projector: StreamProjector<unknown>, entries: ParsedEntry<unknown>[], workspaceId: string | null): Promise<boolean> {
    const attempt = () => this.transactions.run((tx) => projector.project(tx.manager, entries, tx));
    try {
      await attempt().catch(async (error: unknown) => {
        if (!isMissingPartition(error)) throw error;
        for (const at of monthsOf(entries)) await this.partitions.create(projector.partitioned, at);
        await attempt();
      });
      return true;
    } catch (error) {
      if (workspaceId !== null) {
        this.logger.warn({
          msg: 'workspace batch rolled back; its entries stay pending',
          stream: projector.stream,
          workspace_id: workspaceId,
          entries: entries.length,
          ...errorFields(error),
        });
      }
      return false;
    }
  }
}
