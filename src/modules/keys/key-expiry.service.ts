import { Inject, Injectable } from '@nestjs/common';
import { formatTimeRequired } from 'src/common/time/time';
import { APP_CONFIG, AppConfig } from 'src/config/config';
import { Transactions } from 'src/database/transactions';
import { VirtualKeysRepository } from 'src/modules/keys/virtual-keys.repository';
import { OutboxService } from 'src/modules/notifications/outbox.service';

/** `key.expiring`: the notification that a key's expiry is near. */
@Injectable()
export class KeyExpiry {
  constructor(
    private readonly keys: VirtualKeysRepository,
    private readonly transactions: Transactions,
    private readonly outbox: OutboxService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /**
   * `key.expiring` once per key (and expiry: a key whose expiry is moved is told again) for every
   * unrevoked key expiring within NOTIFY_KEY_EXPIRING_DAYS; the outbox's dedupe key makes a
   * second replica's pass or a repeated pass emit nothing. Answers how many were emitted.
   */
  async notifyExpiring(now = new Date()): Promise<number> {
    const horizon = new Date(now.getTime() + this.config.notify.keyExpiringDays * 86_400_000);
    let emitted = 0;
    for (const key of await this.keys.expiring(now, horizon)) {
      const expiresAt = formatTimeRequired(key.expiresAt!);
      const id = await this.transactions.run((tx) =>
        this.outbox.emit(
          tx,
          key.workspaceId,
          'key.expiring',
          { key_id: key.id, agent_id: key.agentId, expires_at: expiresAt },
          { dedupe: { key: `key.expiring:${key.id}:${expiresAt}`, until: key.expiresAt! } },
        ),
      );
      if (id) emitted++;
    }
    return emitted;
  }
}
