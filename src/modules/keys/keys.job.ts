import { Injectable, Logger } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { KeysService } from 'src/modules/keys/keys.service';
import { errorFields } from 'src/common/logging/error-fields';

export const KEY_SYNC_INTERVAL_MS = 2000;

/**
 * Retries hot-path writes and deletions that failed after commit (Redis down during a mint or a
 * revoke) until they settle. Safe on any number of replicas: each sync runs under the key's row lock.
 */
@Injectable()
export class KeysJob {
  private readonly logger = new Logger('keys');
  private running = false;

  constructor(private readonly keys: KeysService) {}

  @Interval(KEY_SYNC_INTERVAL_MS)
  async tick(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      await this.keys.reconcile();
    } catch (error) {
      this.logger.warn({ msg: 'key sync pass failed', ...errorFields(error) });
    } finally {
      this.running = false;
    }
  }
}
