import { Injectable, Logger } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { singleFlight } from 'src/common/async/single-flight';
import { errorFields } from 'src/common/logging/error-fields';
import { HOUR_MS } from 'src/common/time/time';
import { HandshakesRepository } from 'src/modules/connections/handshakes.repository';

/** Kept this long after expiry, so a late callback still reads "expired" rather than "unknown". */
export const EXPIRED_GRANT_RETENTION_MS = 24 * HOUR_MS;

/**
 * Deletes OAuth state rows and catalog sessions a day after they expired (they are single use and
 * ten minutes long, so nothing reads them after that). Idempotent: safe on every replica.
 */
@Injectable()
export class ExpiredGrantsJob {
  private readonly logger = new Logger('connections');
  private readonly pass = singleFlight(
    () => this.purge(),
    (error) => this.logger.warn({ msg: 'expired grant purge failed', ...errorFields(error) }),
  );

  constructor(private readonly handshakes: HandshakesRepository) {}

  @Interval(HOUR_MS)
  tick(): Promise<void> {
    return this.pass();
  }

  /** Returns how many rows went. */
  purge(): Promise<number> {
    return this.handshakes.purgeExpired(new Date(Date.now() - EXPIRED_GRANT_RETENTION_MS));
  }
}
