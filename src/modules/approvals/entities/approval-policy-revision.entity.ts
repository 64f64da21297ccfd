import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { ApprovalRule } from 'src/modules/approvals/rules';

/** `approval_policy_revisions`: An approval policy as it was at one revision. */
@Entity({ name: 'approval_policy_revisions' })
export class ApprovalPolicyRevision {
  @PrimaryColumn({ name: 'id', type: 'text' })
  id: string;

  @Column({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @Column({ name: 'policy_id', type: 'text' })
  policyId: string;

  @Column({ name: 'revision', type: 'integer' })
  revision: number;

  @Column({ name: 'name', type: 'text' })
  name: string;

  @Column({ name: 'rules', type: 'jsonb' })
  rules: ApprovalRule[];

  @Column({ name: 'created_by', type: 'text', nullable: true })
  createdBy: string | null;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;
}
