import { Inject, Injectable, Logger } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { errorFields } from 'src/common/logging/error-fields';
import { APP_CONFIG, AppConfig } from 'src/config/config';
import { ParkedStreamEntriesRepository } from 'src/modules/streams/parked-stream-entries.repository';
import { ReadModelPartitions } from 'src/modules/streams/read-model-partitions';
import { MonthTable, ReadModelPartitionsRepository } from 'src/modules/streams/read-model-partitions.repository';
import { monthKey, monthStart, StreamProjector } from 'src/modules/streams/stream-projector';
import { WorkspacesService } from 'src/modules/workspaces/workspaces.service';

/** What a maintenance run did: the partitions it dropped, and the steps that failed (each logged). */
export interface MaintenanceResult {
  dropped: string[];
  failed: string[];
}

/** The statement bound of maintenance steps, above DATABASE_STATEMENT_TIMEOUT_MS: a concurrent detach waits for every transaction that still sees the partition. */
export const MAINTENANCE_STATEMENT_TIMEOUT_MS = 120_000;
/**
 * Most rows one retention transaction deletes: it holds the receipt counter row of its workspace,
 * which every ingestion batch of that workspace updates, until it commits.
 */
export const RETENTION_BATCH = 5_000;
/** Workspaces read per page while retention walks them. */
const RETENTION_PAGE = 500;

/** The read models' upkeep: month partitions ahead of ingestion, and retention behind it. */
@Injectable()
export class ReadModelMaintenance {
  private readonly logger = new Logger('streams');

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repository: ReadModelPartitionsRepository,
    private readonly partitions: ReadModelPartitions,
    private readonly parkedEntries: ParkedStreamEntriesRepository,
    private readonly workspaces: WorkspacesService,
  ) {}

  /**
   * Creates the partitions of this month and the next two, then applies retention: partitions of
   * months before the cutoff are detached concurrently and dropped, and each read model deletes its
   * older rows workspace by workspace. Every step is its own short transaction (or, for the
   * detach, none), so a failing step undoes nothing another step did and never leaves the
   * partition cache listing a partition that does not exist; a failed step is logged, named in
   * `failed`, and the other steps still run (the next run retries). One replica at a time
   * (session-level advisory lock): null when another holds it.
   */
  maintain(projectors: StreamProjector<unknown>[], now = new Date()): Promise<MaintenanceResult | null> {
    return this.repository.withMaintenanceSession(MAINTENANCE_STATEMENT_TIMEOUT_MS, (session) => this.steps(session, projectors, now));
  }

  private async steps(session: EntityManager, projectors: StreamProjector<unknown>[], now: Date): Promise<MaintenanceResult> {
    const cutoff = monthStart(now, -this.config.readModelRetentionMonths);
    const result: MaintenanceResult = { dropped: [], failed: [] };
    const step = async (name: string, work: () => Promise<unknown>) => {
      try {
        await work();
      } catch (error) {
        result.failed.push(name);
        this.logger.warn({ msg: 'read model maintenance step failed', step: name, ...errorFields(error) });
      }
    };
    for (const { partitioned } of projectors) {
      for (let m = 0; m <= 2; m++) {
        await step(`create ${partitioned} ${monthKey(monthStart(now, m))}`, () => this.partitions.create(partitioned, monthStart(now, m), session));
      }
    }
    for (const { partitioned } of projectors) {
      for (const old of await this.partitionsBefore(session, partitioned, cutoff)) {
        await step(`drop ${old.name}`, async () => {
          this.partitions.forget(partitioned, old.month);
          await this.repository.drop(session, partitioned, old);
          result.dropped.push(old.name);
        });
      }
    }
    for (const projector of projectors) await step(`retain ${projector.stream}`, () => this.retain(session, projector, cutoff));
    await step('retain stream_parked', () => this.parkedEntries.deleteParkedBefore(session, cutoff));
    return result;
  }

  /** The month tables of `parent` before `cutoff`, oldest first. */
  private async partitionsBefore(session: EntityManager, parent: string, cutoff: Date): Promise<(MonthTable & { month: string })[]> {
    return (await this.repository.monthTables(session, parent))
      .map((t) => ({ ...t, month: `${t.name.slice(-6, -2)}-${t.name.slice(-2)}` }))
      .filter((t) => Date.parse(`${t.month}-01T00:00:00Z`) < cutoff.getTime())
      .sort((a, b) => (a.name < b.name ? -1 : 1));
  }

  /**
   * The read model's own retention, one workspace and at most RETENTION_BATCH rows per
   * transaction, so an ingestion batch never waits on it for longer than one such transaction.
   */
  private async retain(session: EntityManager, projector: StreamProjector<unknown>, cutoff: Date): Promise<void> {
    let after = '';
    for (;;) {
      const page = await this.workspaces.idsAfter(after, RETENTION_PAGE, session);
      for (const workspaceId of page) {
        let deleted: number;
        do {
          deleted = await this.repository.retentionTransaction(session, (manager) => projector.retain(manager, workspaceId, cutoff, RETENTION_BATCH));
        } while (deleted === RETENTION_BATCH);
      }
      if (page.length < RETENTION_PAGE) return;
      after = page[page.length - 1];
    }
  }
}
