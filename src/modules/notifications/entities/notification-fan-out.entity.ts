import { Column, Entity, PrimaryColumn } from 'typeorm';

/** `notification_fan_outs`: a message whose delivery rows the dispatcher has not written yet, with the endpoints the act addressed it to. */
@Entity({ name: 'notification_fan_outs' })
export class NotificationFanOut {
  @PrimaryColumn({ name: 'message_id', type: 'text' })
  messageId: string;

  @Column({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @Column({ name: 'endpoint_ids', type: 'text', array: true })
  endpointIds: string[];

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;
}
