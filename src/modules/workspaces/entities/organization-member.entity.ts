import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A row of `organization_members`. */
@Entity({ name: 'organization_members' })
export class OrganizationMember {
  @PrimaryColumn({ name: 'org_id', type: 'text' })
  orgId: string;

  @PrimaryColumn({ name: 'user_id', type: 'text' })
  userId: string;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;
}
