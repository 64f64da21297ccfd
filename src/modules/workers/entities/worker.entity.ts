import { Column, Entity, PrimaryColumn } from 'typeorm';

/** `workers`: A Worker and its draft and published revisions. */
@Entity({ name: 'workers' })
export class Worker {
  @PrimaryColumn({ name: 'id', type: 'text' })
  id: string;

  @Column({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @Column({ name: 'env', type: 'text' })
  env: string;

  @Column({ name: 'slug', type: 'text' })
  slug: string;

  @Column({ name: 'display_name', type: 'text' })
  displayName: string;

  @Column({ name: 'description', type: 'text', nullable: true })
  description: string | null;

  @Column({ name: 'agent_passport_id', type: 'text' })
  agentPassportId: string;

  @Column({ name: 'lifecycle', type: 'text' })
  lifecycle: string;

  @Column({ name: 'draft_revision_id', type: 'text', nullable: true })
  draftRevisionId: string | null;

  @Column({ name: 'published_revision_id', type: 'text', nullable: true })
  publishedRevisionId: string | null;

  @Column({ name: 'latest_revision_number', type: 'integer' })
  latestRevisionNumber: number;

  @Column({ name: 'template_id', type: 'text', nullable: true })
  templateId: string | null;

  @Column({ name: 'created_by_user_id', type: 'text' })
  createdByUserId: string;

  @Column({ name: 'created_by_display_name', type: 'text', nullable: true })
  createdByDisplayName: string | null;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', precision: 3 })
  updatedAt: Date;
}
