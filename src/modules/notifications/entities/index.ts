import { NotificationAttempt } from 'src/modules/notifications/entities/notification-attempt.entity';
import { NotificationDelivery } from 'src/modules/notifications/entities/notification-delivery.entity';
import { NotificationEndpoint } from 'src/modules/notifications/entities/notification-endpoint.entity';
import { NotificationMessage } from 'src/modules/notifications/entities/notification-message.entity';

/** The tables notifications owns: its repositories may name these and no others (test/platform/ownership.spec.ts). */
export const NOTIFICATIONS_ENTITIES = [NotificationAttempt, NotificationDelivery, NotificationEndpoint, NotificationMessage];
