import { Column, Entity, PrimaryColumn } from 'typeorm';

/** `organization_members`: A user allowed to create workspaces in an organization. */
@Entity({ name: 'organization_members' })
export class OrganizationMember {
  @PrimaryColumn({ name: 'org_id', type: 'text' })
  orgId: string;

  @PrimaryColumn({ name: 'user_id', type: 'text' })
  userId: string;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;
}
