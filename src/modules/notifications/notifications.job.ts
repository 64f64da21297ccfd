import { Inject, Injectable, Logger } from '@nestjs/common';
import { Cron, CronExpression } from '@nestjs/schedule';
import { singleFlight } from 'src/common/async/single-flight';
import { errorFields } from 'src/common/logging/error-fields';
import { APP_CONFIG, AppConfig } from 'src/config/config';
import { NotificationMessagesRepository } from 'src/modules/notifications/notification-messages.repository';

/**
 * Drops messages and attempts older than NOTIFY_RETENTION_DAYS, a message whose dedupe key can still
 * recur only once it cannot (idempotent: replicas may both run it).
 */
@Injectable()
export class NotificationsJob {
  private readonly logger = new Logger('notifications');
  private readonly pass = singleFlight(
    () => {
      const now = new Date();
      return this.messages.purge(new Date(now.getTime() - this.config.notify.retentionDays * 86_400_000), now);
    },
    (error) => this.logger.warn({ msg: 'notification retention failed', ...errorFields(error) }),
  );

  constructor(
    private readonly messages: NotificationMessagesRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  @Cron(CronExpression.EVERY_HOUR, { name: 'notification-retention' })
  purge(): Promise<void> {
    return this.pass();
  }
}
