import { Column, Entity, PrimaryColumn } from 'typeorm';

/** `policy_revisions`: An immutable published policy revision (a trigger refuses updates and deletes). */
@Entity({ name: 'policy_revisions' })
export class PolicyRevision {
  @PrimaryColumn({ name: 'id', type: 'text' })
  id: string;

  @Column({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @Column({ name: 'policy_id', type: 'text' })
  policyId: string;

  @Column({ name: 'cedar_text', type: 'text' })
  cedarText: string;

  @Column({ name: 'draft_hash', type: 'text' })
  draftHash: string;

  @Column({ name: 'bundle_hash', type: 'text' })
  bundleHash: string;

  @Column({ name: 'entities', type: 'jsonb' })
  entities: unknown[];

  @Column({ name: 'published_by', type: 'text', nullable: true })
  publishedBy: string | null;

  @Column({ name: 'published_at', type: 'timestamptz', precision: 3 })
  publishedAt: Date;
}
