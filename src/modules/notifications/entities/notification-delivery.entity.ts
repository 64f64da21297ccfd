import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

export const DELIVERY_STATES = ['pending', 'delivered', 'failed'] as const;
export type DeliveryState = (typeof DELIVERY_STATES)[number];

/** `notification_deliveries`: one message to one endpoint, with its retry state and claim. */
@Entity({ name: 'notification_deliveries' })
@Index('notification_deliveries_endpoint_due', ['endpointId', 'nextAttemptAt'], { where: `state = 'pending'` })
@Index('notification_deliveries_failed', ['endpointId'], { where: `state = 'failed'` })
export class NotificationDelivery {
  @PrimaryColumn({ name: 'endpoint_id', type: 'text' })
  endpointId: string;

  @PrimaryColumn({ name: 'message_id', type: 'text' })
  messageId: string;

  @Column({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @Column({ name: 'state', type: 'text' })
  state: DeliveryState;

  @Column({ name: 'attempts', type: 'integer' })
  attempts: number;

  @Column({ name: 'next_attempt_at', type: 'timestamptz', precision: 3, nullable: true })
  nextAttemptAt: Date | null;

  @Column({ name: 'last_attempt_at', type: 'timestamptz', precision: 3, nullable: true })
  lastAttemptAt: Date | null;

  @Column({ name: 'claimed_until', type: 'timestamptz', precision: 3, nullable: true })
  claimedUntil: Date | null;
}
