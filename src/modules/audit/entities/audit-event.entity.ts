import { Column, Entity, PrimaryColumn } from 'typeorm';

/** `audit_events`: An audit row, written in the transaction of the change it records. */
@Entity({ name: 'audit_events' })
export class AuditEvent {
  @PrimaryColumn({ name: 'id', type: 'text' })
  id: string;

  @Column({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @Column({ name: 'actor_user_id', type: 'text', nullable: true })
  actorUserId: string | null;

  @Column({ name: 'actor_email', type: 'text', nullable: true })
  actorEmail: string | null;

  @Column({ name: 'action', type: 'text' })
  action: string;

  @Column({ name: 'target', type: 'text', nullable: true })
  target: string | null;

  @Column({ name: 'detail', type: 'jsonb' })
  detail: Record<string, unknown>;

  @Column({ name: 'occurred_at', type: 'timestamptz', precision: 3 })
  occurredAt: Date;

  /** Position in the workspace's chain: 1, 2, 3, ... in commit order (docs/audit.md). */
  @Column({ name: 'seq', type: 'bigint' })
  seq: string;

  /** SHA-256 over the previous link and this row's canonical JSON, 64 lowercase hex. */
  @Column({ name: 'chain_hash', type: 'text' })
  chainHash: string;
}
