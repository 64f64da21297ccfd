import { Injectable, Logger } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { DataSource } from 'typeorm';
import { errorFields } from 'src/common/logging/error-fields';
import { HOUR_MS } from 'src/common/time/time';

/** Kept this long after expiry, so a late callback still reads "expired" rather than "unknown". */
export const EXPIRED_GRANT_RETENTION_MS = 24 * HOUR_MS;

/**
 * Deletes OAuth state rows and catalog sessions a day after they expired (they are single use and
 * ten minutes long, so nothing reads them after that). Idempotent: safe on every replica.
 */
@Injectable()
export class ExpiredGrantsJob {
  private readonly logger = new Logger('connections');

  constructor(private readonly dataSource: DataSource) {}

  @Interval(HOUR_MS)
  async tick(): Promise<void> {
    try {
      await this.purge();
    } catch (error) {
      this.logger.warn({ msg: 'expired grant purge failed', ...errorFields(error) });
    }
  }

  /** Returns how many rows went. */
  async purge(): Promise<number> {
    const cutoff = new Date(Date.now() - EXPIRED_GRANT_RETENTION_MS);
    const [, states] = await this.dataSource.query(`DELETE FROM oauth_states WHERE expires_at < $1`, [cutoff]);
    const [, sessions] = await this.dataSource.query(`DELETE FROM catalog_sessions WHERE expires_at < $1`, [cutoff]);
    return states + sessions;
  }
}
