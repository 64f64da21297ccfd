import { Column, Entity, PrimaryColumn } from 'typeorm';

/** `policies`: The workspace's Cedar policy draft (one row per workspace once stored) and its current revision. */
@Entity({ name: 'policies' })
export class Policy {
  @PrimaryColumn({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @Column({ name: 'id', type: 'text' })
  id: string;

  @Column({ name: 'cedar_text', type: 'text' })
  cedarText: string;

  @Column({ name: 'draft_hash', type: 'text' })
  draftHash: string;

  @Column({ name: 'draft_updated_at', type: 'timestamptz', precision: 3 })
  draftUpdatedAt: Date;

  @Column({ name: 'current_revision_id', type: 'text', nullable: true })
  currentRevisionId: string | null;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;
}
