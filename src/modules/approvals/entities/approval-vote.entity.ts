import { Column, Entity, PrimaryColumn } from 'typeorm';

/** `approval_votes`: A reviewer's vote on an approval. */
@Entity({ name: 'approval_votes' })
export class ApprovalVote {
  @PrimaryColumn({ name: 'approval_id', type: 'text' })
  approvalId: string;

  @Column({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @PrimaryColumn({ name: 'user_id', type: 'text' })
  userId: string;

  @Column({ name: 'decision', type: 'text' })
  decision: 'approve' | 'deny';

  @Column({ name: 'reason', type: 'text' })
  reason: string;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;
}
