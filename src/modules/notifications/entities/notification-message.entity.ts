import { Column, Entity, PrimaryColumn } from 'typeorm';

/** `notification_messages`: the outbox; `body` is the message exactly as delivered (immutable). */
@Entity({ name: 'notification_messages' })
export class NotificationMessage {
  @PrimaryColumn({ name: 'id', type: 'text' })
  id: string;

  @Column({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @Column({ name: 'seq', type: 'bigint', insert: false, update: false })
  seq: string;

  @Column({ name: 'type', type: 'text' })
  type: string;

  @Column({ name: 'body', type: 'text' })
  body: string;

  @Column({ name: 'dedupe_key', type: 'text', nullable: true })
  dedupeKey: string | null;

  /** Until when the dedupe key's event can recur: retention keeps the message until then. */
  @Column({ name: 'dedupe_until', type: 'timestamptz', precision: 3, nullable: true })
  dedupeUntil: Date | null;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;
}
