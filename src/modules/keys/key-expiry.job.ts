import { Injectable, Logger } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { singleFlight } from 'src/common/async/single-flight';
import { errorFields } from 'src/common/logging/error-fields';
import { KeyExpiry } from 'src/modules/keys/key-expiry.service';

export const KEY_EXPIRING_INTERVAL_MS = 60_000;

/** `key.expiring` for keys entering NOTIFY_KEY_EXPIRING_DAYS (exactly once, whatever the replicas). */
@Injectable()
export class KeyExpiryJob {
  private readonly logger = new Logger('keys');
  private readonly pass = singleFlight(
    () => this.expiry.notifyExpiring(),
    (error) => this.logger.warn({ msg: 'key expiry notification pass failed', ...errorFields(error) }),
  );

  constructor(private readonly expiry: KeyExpiry) {}

  @Interval(KEY_EXPIRING_INTERVAL_MS)
  tick(): Promise<void> {
    return this.pass();
  }
}
