import { Injectable, OnApplicationShutdown } from '@nestjs/common';
import { redisDeadline } from 'src/database/redis.module';
import { EntryParking } from 'src/modules/streams/entry-parking';
import { MaintenanceResult, ReadModelMaintenance } from 'src/modules/streams/read-model-maintenance';
import { AdmittedBatch, ShardedProjection } from 'src/modules/streams/sharded-projection';
import { PassOptions, PassResult, StreamName, StreamProjector } from 'src/modules/streams/stream-projector';
import { StreamReader } from 'src/modules/streams/stream-reader';
import { MetricsService } from 'src/platform/metrics/metrics.service';

// The projector contract and the consumer's constants, where the read models and suites import them.
export { BATCH_LIMIT, CLAIM_IDLE_MS, GROUP, monthStart, PROJECT_SHARDS } from 'src/modules/streams/stream-projector';
export type { ParkedEntry, ParsedEntry, PassOptions, PassResult, StreamName, StreamProjector } from 'src/modules/streams/stream-projector';
export type { MaintenanceResult } from 'src/modules/streams/read-model-maintenance';
export { MAINTENANCE_STATEMENT_TIMEOUT_MS, RETENTION_BATCH } from 'src/modules/streams/read-model-maintenance';
export { shardWorkspaces } from 'src/modules/streams/sharded-projection';

/**
 * The consumer of the gateway streams (CONTRACT.md 4.4) for every registered read model: one
 * pass reclaims stale pending entries and tops up with fresh ones (`StreamReader`), parks
 * malformed entries (`EntryParking`), projects the rest in concurrent shard transactions and
 * acknowledges what was committed (`ShardedProjection`). Transport is at-least-once; projections
 * are idempotent. It also runs the month partitions and retention (`ReadModelMaintenance`); the
 * periodic passes are `StreamsJob`'s.
 */
@Injectable()
export class StreamsService implements OnApplicationShutdown {
  private readonly projectors = new Map<StreamName, StreamProjector<unknown>>();
  private readonly draining = new Set<Promise<unknown>>();
  private stopping = false;

  constructor(
    private readonly reader: StreamReader,
    private readonly parking: EntryParking,
    private readonly projection: ShardedProjection,
    private readonly maintenance: ReadModelMaintenance,
    metrics: MetricsService,
  ) {
    metrics.gauge('control_stream_pending', 'Entries delivered to group control and not yet acknowledged', () => this.perStream((s) => this.reader.pendingCount(s)), 'stream');
    metrics.gauge('control_stream_lag', 'Entries of the stream not yet delivered to group control', () => this.perStream((s) => this.reader.lag(s)), 'stream');
  }

  private async perStream(read: (stream: StreamName) => Promise<number>): Promise<Record<string, number>> {
    const out: Record<string, number> = {};
    if (!this.reader.enabled) return out;
    for (const stream of this.projectors.keys()) out[stream] = await redisDeadline(read(stream)).catch(() => 0);
    return out;
  }

  /**
   * Entries delivered to group `control` and not yet acknowledged, per registered stream (0 before
   * the group exists); throws when Redis does not answer. Empty without Redis.
   */
  async pendingBacklog(): Promise<Partial<Record<StreamName, number>>> {
    const out: Partial<Record<StreamName, number>> = {};
    if (!this.reader.enabled) return out;
    for (const stream of this.projectors.keys()) {
      out[stream] = await this.reader.pendingCount(stream).catch((error: unknown) => {
        if (error instanceof Error && error.message.startsWith('NOGROUP')) return 0;
        throw error;
      });
    }
    return out;
  }

  register<T>(projector: StreamProjector<T>): void {
    if (this.projectors.has(projector.stream)) throw new Error(`stream ${projector.stream} registered twice`);
    this.projectors.set(projector.stream, projector as StreamProjector<unknown>);
  }

  streamKey(stream: StreamName): string {
    return this.reader.streamKey(stream);
  }

  /** Where the XAUTOCLAIM scan of this stream, group and consumer resumes. */
  claimPositionKey(stream: StreamName): string {
    return this.reader.claimPositionKey(stream);
  }

  /** One consumption pass over `stream`; null when streams are disabled (no REDIS_URL). */
  async pass(stream: StreamName, options: PassOptions = {}): Promise<PassResult | null> {
    const batch = await this.admit(stream, options);
    return batch && this.commit(batch, options);
  }

  /** Runs passes over every stream (the streams concurrently) until each is drained; answers the entries projected. */
  async drain(options: PassOptions = {}): Promise<number> {
    // Settled together, so a failing stream never leaves the other one running behind the job's back.
    const settled = Promise.allSettled([...this.projectors.keys()].map((stream) => this.drainStream(stream, options)));
    this.draining.add(settled);
    const outcomes = await settled.finally(() => this.draining.delete(settled));
    let projected = 0;
    for (const outcome of outcomes) {
      if (outcome.status === 'rejected') throw outcome.reason;
      projected += outcome.value;
    }
    return projected;
  }

  /** The read models' partitions and retention (`ReadModelMaintenance.maintain`). */
  maintain(now = new Date()): Promise<MaintenanceResult | null> {
    return this.maintenance.maintain([...this.projectors.values()], now);
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopping = true;
    await Promise.allSettled([...this.draining]);
    this.reader.close();
  }

  /**
   * Passes over one stream until one comes back short. The next batch is read, parsed and its
   * malformed entries parked while the current one is projected; batches still commit (and are
   * acknowledged) one after the other, in stream order. If a commit throws, the batch read ahead
   * stays pending and is reclaimed after the idle time, as after a crash.
   */
  private async drainStream(stream: StreamName, options: PassOptions): Promise<number> {
    let projected = 0;
    let next: Promise<AdmittedBatch | null> | null = this.stopping ? null : this.admit(stream, options);
    while (next) {
      const batch = await next;
      if (!batch) break;
      next = batch.full && !this.stopping ? this.admit(stream, options) : null;
      // Handled here already (a rejection while the commit runs is not unhandled); awaited below.
      next?.catch(() => undefined);
      try {
        projected += (await this.commit(batch, options)).projected;
      } catch (error) {
        await next?.catch(() => undefined);
        throw error;
      }
    }
    return projected;
  }

  /** Reads one batch (`StreamReader.read`), parses it and parks what is malformed. */
  private async admit(stream: StreamName, options: PassOptions): Promise<AdmittedBatch | null> {
    const projector = this.projectors.get(stream);
    if (!projector) return null;
    const read = await this.reader.read(stream, options);
    if (!read) return null;
    const { redis, key, claimed, fresh } = read;
    const { valid, parked } = await this.parking.sort(projector, redis, key, [...claimed, ...fresh]);
    return { projector, redis, key, reclaimed: claimed.length, fresh: fresh.length, parked, bytes: read.bytes, full: read.full, valid };
  }

  private async commit(batch: AdmittedBatch, options: PassOptions): Promise<PassResult> {
    const { committed, failed } = await this.projection.commit(batch, options.shards);
    return { reclaimed: batch.reclaimed, fresh: batch.fresh, projected: committed, parked: batch.parked, failed, bytes: batch.bytes };
  }
}
