import { Column, Entity, PrimaryColumn } from 'typeorm';

export type AttemptError = 'timeout' | 'connection' | 'refused_target' | 'http_status';

/** `notification_attempts`: the attempt log (never a secret). */
@Entity({ name: 'notification_attempts' })
export class NotificationAttempt {
  @PrimaryColumn({ name: 'id', type: 'text' })
  id: string;

  @Column({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @Column({ name: 'endpoint_id', type: 'text' })
  endpointId: string;

  @Column({ name: 'message_id', type: 'text' })
  messageId: string;

  @Column({ name: 'type', type: 'text' })
  type: string;

  @Column({ name: 'attempt', type: 'integer' })
  attempt: number;

  @Column({ name: 'status', type: 'text' })
  status: 'succeeded' | 'failed';

  @Column({ name: 'response_status', type: 'integer', nullable: true })
  responseStatus: number | null;

  @Column({ name: 'error', type: 'text', nullable: true })
  error: AttemptError | null;

  @Column({ name: 'duration_ms', type: 'integer' })
  durationMs: number;

  @Column({ name: 'response_excerpt', type: 'text' })
  responseExcerpt: string;

  @Column({ name: 'attempted_at', type: 'timestamptz', precision: 3 })
  attemptedAt: Date;
}
