import { Column, Entity, PrimaryColumn } from 'typeorm';

/** `organizations`: An organization: the tenant that holds workspaces. */
@Entity({ name: 'organizations' })
export class Organization {
  @PrimaryColumn({ name: 'id', type: 'text' })
  id: string;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;
}
