import { Injectable, Logger } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { PublicationService } from 'src/modules/publication/publication.service';
import { SnapshotHistoryService } from 'src/modules/publication/snapshot-history.service';
import { errorFields } from 'src/common/logging/error-fields';

export const RECONCILE_INTERVAL_MS = 2000;
export const PRUNE_INTERVAL_MS = 60_000;
/** How often the current documents are checked for a signature by a key no longer current (a rotation). */
export const RESIGN_INTERVAL_MS = 60_000;

/**
 * Retries pending publications until they settle. Safe on any number of replicas: a publish is
 * idempotent and the hot path never goes back to an older version.
 */
@Injectable()
export class PublicationJob {
  private readonly logger = new Logger('publication');
  private running = false;
  private resigning = false;

  constructor(
    private readonly publications: PublicationService,
    private readonly history: SnapshotHistoryService,
  ) {}

  @Interval(RECONCILE_INTERVAL_MS)
  async tick(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      await this.publications.reconcile();
    } catch (error) {
      this.logger.warn({ msg: 'reconciliation pass failed', ...errorFields(error) });
    } finally {
      this.running = false;
    }
  }

  /** Re-signs, as a new version, the current snapshot of every workspace signed by a rotated-out key. */
  @Interval(RESIGN_INTERVAL_MS)
  async resign(): Promise<void> {
    // A pass over many workspaces may outlast the interval: never two at once on one replica.
    if (this.resigning) return;
    this.resigning = true;
    try {
      const staged = await this.publications.resignStale();
      if (staged > 0) this.logger.log({ msg: 'snapshots re-signed after a signing key rotation', workspaces: staged });
    } catch (error) {
      this.logger.warn({ msg: 'snapshot re-signing pass failed', ...errorFields(error) });
    } finally {
      this.resigning = false;
    }
  }

  /** Snapshot history and rollout view retention, one bounded step a minute (each deletes at most 500 rows). */
  @Interval(PRUNE_INTERVAL_MS)
  async prune(): Promise<void> {
    try {
      await this.publications.prune();
      await this.history.forgetInstances();
    } catch (error) {
      this.logger.warn({ msg: 'snapshot history retention step failed', ...errorFields(error) });
    }
  }
}
