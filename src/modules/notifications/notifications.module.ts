import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { NOTIFICATIONS_ENTITIES } from 'src/modules/notifications/entities';
import { AuditModule } from 'src/modules/audit/audit.module';
import { DeliveryWaker } from 'src/modules/notifications/delivery-waker';
import { DeliveryService } from 'src/modules/notifications/delivery.service';
import { EventHub } from 'src/modules/notifications/event-hub';
import { EventStreamService } from 'src/modules/notifications/event-stream.service';
import { NotificationEndpointsController } from 'src/modules/notifications/notification-endpoints.controller';
import { NotificationEndpointsRepository } from 'src/modules/notifications/notification-endpoints.repository';
import { NotificationEndpointsService } from 'src/modules/notifications/notification-endpoints.service';
import { NotificationMessagesController } from 'src/modules/notifications/notification-messages.controller';
import { NotificationMessagesRepository } from 'src/modules/notifications/notification-messages.repository';
import { NotificationMessagesService } from 'src/modules/notifications/notification-messages.service';
import { NotificationsJob } from 'src/modules/notifications/notifications.job';
import { OutboxService } from 'src/modules/notifications/outbox.service';

/**
 * Operator notifications (CONTRACT.md section 7): the outbox other modules write to in the
 * transaction of their act (`OutboxService.emit`), signed webhook delivery, the event stream.
 */
@Module({
  imports: [TypeOrmModule.forFeature(NOTIFICATIONS_ENTITIES), AuditModule],
  controllers: [NotificationEndpointsController, NotificationMessagesController],
  providers: [
    NotificationEndpointsRepository,
    NotificationMessagesRepository,
    OutboxService,
    EventHub,
    DeliveryWaker,
    DeliveryService,
    NotificationEndpointsService,
    NotificationMessagesService,
    EventStreamService,
    NotificationsJob,
  ],
  exports: [OutboxService],
})
export class NotificationsModule {}
