import { Column, Entity, PrimaryColumn } from 'typeorm';

export const ENDPOINT_FORMATS = ['standard', 'slack'] as const;
export type EndpointFormat = (typeof ENDPOINT_FORMATS)[number];
export type DisabledReason = 'failing' | 'gone' | 'operator';

/** `notification_endpoints`: a workspace's webhook target with its signing secret (and the previous one during a rotation's grace). */
@Entity({ name: 'notification_endpoints' })
export class NotificationEndpoint {
  @PrimaryColumn({ name: 'id', type: 'text' })
  id: string;

  @Column({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @Column({ name: 'url', type: 'text' })
  url: string;

  @Column({ name: 'event_types', type: 'text', array: true })
  eventTypes: string[];

  @Column({ name: 'format', type: 'text' })
  format: EndpointFormat;

  @Column({ name: 'description', type: 'text', nullable: true })
  description: string | null;

  @Column({ name: 'enabled', type: 'boolean' })
  enabled: boolean;

  @Column({ name: 'disabled_reason', type: 'text', nullable: true })
  disabledReason: DisabledReason | null;

  @Column({ name: 'revision', type: 'integer' })
  revision: number;

  @Column({ name: 'secret', type: 'text' })
  secret: string;

  @Column({ name: 'previous_secret', type: 'text', nullable: true })
  previousSecret: string | null;

  @Column({ name: 'previous_secret_until', type: 'timestamptz', precision: 3, nullable: true })
  previousSecretUntil: Date | null;

  @Column({ name: 'secret_rotated_at', type: 'timestamptz', precision: 3, nullable: true })
  secretRotatedAt: Date | null;

  @Column({ name: 'failing_since', type: 'timestamptz', precision: 3, nullable: true })
  failingSince: Date | null;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', precision: 3 })
  updatedAt: Date;
}
