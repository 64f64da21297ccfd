import { Injectable, Logger } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { singleFlight } from 'src/common/async/single-flight';
import { errorFields } from 'src/common/logging/error-fields';
import { PublicationService } from 'src/modules/publication/publication.service';
import { SnapshotHistoryService } from 'src/modules/publication/snapshot-history.service';

export const RECONCILE_INTERVAL_MS = 2000;
export const PRUNE_INTERVAL_MS = 60_000;
/** How often the current documents are checked for a signature by a key no longer current (a rotation). */
export const RESIGN_INTERVAL_MS = 60_000;

/**
 * Retries pending publications until they settle. Safe on any number of replicas: a publish is
 * idempotent and the hot path never goes back to an older version. A pass over many workspaces
 * may outlast its interval: never two of one kind at once on one replica.
 */
@Injectable()
export class PublicationJob {
  private readonly logger = new Logger('publication');

  private readonly reconcilePass = singleFlight(
    () => this.publications.reconcile(),
    (error) => this.logger.warn({ msg: 'reconciliation pass failed', ...errorFields(error) }),
  );

  private readonly resignPass = singleFlight(
    async () => {
      const staged = await this.publications.resignStale();
      if (staged > 0) this.logger.log({ msg: 'snapshots re-signed after a signing key rotation', workspaces: staged });
    },
    (error) => this.logger.warn({ msg: 'snapshot re-signing pass failed', ...errorFields(error) }),
  );

  private readonly prunePass = singleFlight(
    async () => {
      await this.publications.prune();
      await this.history.forgetInstances();
    },
    (error) => this.logger.warn({ msg: 'snapshot history retention step failed', ...errorFields(error) }),
  );

  constructor(
    private readonly publications: PublicationService,
    private readonly history: SnapshotHistoryService,
  ) {}

  @Interval(RECONCILE_INTERVAL_MS)
  tick(): Promise<void> {
    return this.reconcilePass();
  }

  /** Re-signs, as a new version, the current snapshot of every workspace signed by a rotated-out key. */
  @Interval(RESIGN_INTERVAL_MS)
  resign(): Promise<void> {
    return this.resignPass();
  }

  /** Snapshot history and rollout view retention, one bounded step a minute (each deletes at most 500 rows). */
  @Interval(PRUNE_INTERVAL_MS)
  prune(): Promise<void> {
    return this.prunePass();
  }
}
