import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { Role } from 'src/platform/access/actions';

/** `workspace_members`: A user's role in a workspace. */
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
