import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { StoredSigningKey } from 'src/modules/webhooks/dto/subscription.document';

/** `webhook_subscriptions`: A webhook subscription: the gateway's ingress configuration with its sealed signing-key contract. */
@Entity({ name: 'webhook_subscriptions' })
export class WebhookSubscription {
  @PrimaryColumn({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @PrimaryColumn({ name: 'connection_id', type: 'text' })
  connectionId: string;

  @PrimaryColumn({ name: 'id', type: 'text' })
  id: string;

  @Column({ name: 'signature_profile', type: 'text' })
  signatureProfile: string;

  @Column({ name: 'tolerance_seconds', type: 'integer' })
  toleranceSeconds: number;

  @Column({ name: 'notification_url', type: 'text', nullable: true })
  notificationUrl: string | null;

  @Column({ name: 'signing_keys', type: 'jsonb' })
  signingKeys: StoredSigningKey[];

  @Column({ name: 'revision', type: 'integer' })
  revision: number;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', precision: 3 })
  updatedAt: Date;
}
