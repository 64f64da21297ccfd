import { Inject, Injectable, Logger } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from 'src/config/config';
import { Transactions } from 'src/database/transactions';
import { Redis } from 'src/database/redis.module';
import { EntryReader, MalformedEntry } from 'src/modules/streams/entry-reader';
import { ParkedStreamEntriesRepository } from 'src/modules/streams/parked-stream-entries.repository';
import { RawEntry } from 'src/modules/streams/read-budget';
import { monthStart, ParkedEntry, ParsedEntry, StreamProjector } from 'src/modules/streams/stream-projector';
import { StreamReader } from 'src/modules/streams/stream-reader';
import { MetricsService } from 'src/platform/metrics/metrics.service';
import { WorkspacesService } from 'src/modules/workspaces/workspaces.service';

/** Entries dated further ahead than this are parked (a partition is never created for them). */
const FUTURE_SKEW_MS = 86_400_000;
/** The most of an entry's data a parked row keeps. */
const PARKED_DATA_MAX = 65_536;

/**
 * Parses a batch and parks what cannot be projected: malformed entries, entries dated too far
 * ahead or before the retention period, and entries of workspaces that do not exist. Parked
 * entries are kept in `stream_parked` (with what the read model records of the loss, usage gaps),
 * acknowledged and never retried.
 */
@Injectable()
export class EntryParking {
  private readonly logger = new Logger('streams');

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly transactions: Transactions,
    private readonly parkedEntries: ParkedStreamEntriesRepository,
    private readonly reader: StreamReader,
    private readonly workspaces: WorkspacesService,
    private readonly metrics: MetricsService,
  ) {}

  /** Parses a batch; parks (and acknowledges) the malformed entries and those of unknown workspaces. */
  async sort(projector: StreamProjector<unknown>, redis: Redis, key: string, raw: RawEntry[]): Promise<{ valid: ParsedEntry<unknown>[]; parked: number }> {
    const parsed: ParsedEntry<unknown>[] = [];
    const parked: (ParkedEntry & { data: string | null })[] = [];
    const oldest = monthStart(new Date(), -this.config.readModelRetentionMonths).getTime();
    for (const [id, fields] of raw) {
      const index = fields ? fields.findIndex((f, i) => i % 2 === 0 && f === 'data') : -1;
      const data = index >= 0 ? fields![index + 1] : null;
      let reader: EntryReader | null = null;
      try {
        reader = EntryReader.parse(data);
        const entry = projector.parse(reader);
        const at = entry.partitionTime?.getTime();
        if (at !== undefined && at > Date.now() + FUTURE_SKEW_MS) throw new MalformedEntry('occurred_at is in the future');
        if (at !== undefined && at < oldest) throw new MalformedEntry('occurred_at is older than the retention period');
        parsed.push({ id, ...entry });
      } catch (error) {
        if (!(error instanceof MalformedEntry)) throw error;
        parked.push({ id, workspaceId: reader?.workspaceHint() ?? null, reason: error.message, data: data?.slice(0, PARKED_DATA_MAX) ?? null });
      }
    }

    const workspaceIds = [...new Set(parsed.map((e) => e.workspaceId))];
    const known = workspaceIds.length === 0 ? new Set<string>() : await this.workspaces.existing(workspaceIds);
    const valid = parsed.filter((e) => known.has(e.workspaceId));
    for (const e of parsed) if (!known.has(e.workspaceId)) parked.push({ id: e.id, workspaceId: e.workspaceId, reason: 'unknown workspace', data: null });

    if (parked.length > 0) {
      await this.transactions.run(async (tx) => {
        await this.parkedEntries.park(tx.manager, projector.stream, parked);
        await projector.parked?.(tx.manager, parked);
      });
      await this.reader.ack(redis, key, parked.map((p) => p.id));
      for (const p of parked) this.logger.warn({ msg: 'stream entry parked', stream: projector.stream, entry_id: p.id, reason: p.reason });
      this.metrics.streamParked.inc({ stream: projector.stream }, parked.length);
    }

    return { valid, parked: parked.length };
  }
}
