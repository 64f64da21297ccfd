import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { ApprovalRule } from 'src/modules/approvals/rules';

/** `approval_policies`: An approval policy: its current name, status and rules. */
@Entity({ name: 'approval_policies' })
export class ApprovalPolicy {
  @PrimaryColumn({ name: 'id', type: 'text' })
  id: string;

  @Column({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @Column({ name: 'name', type: 'text' })
  name: string;

  @Column({ name: 'status', type: 'text' })
  status: 'active' | 'disabled';

  @Column({ name: 'revision', type: 'integer' })
  revision: number;

  @Column({ name: 'revision_id', type: 'text' })
  revisionId: string;

  @Column({ name: 'rules', type: 'jsonb' })
  rules: ApprovalRule[];

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', precision: 3 })
  updatedAt: Date;
}
