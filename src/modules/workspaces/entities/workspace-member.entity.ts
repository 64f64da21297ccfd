import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { Role } from 'src/common/access/actions';

/** A row of `workspace_members`. */
@Entity({ name: 'workspace_members' })
export class WorkspaceMember {
  @PrimaryColumn({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @PrimaryColumn({ name: 'user_id', type: 'text' })
  userId: string;

  @Column({ name: 'role', type: 'text' })
  role: Role;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;
}
