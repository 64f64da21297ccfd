import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * `snapshot_versions`: a staged version and the audit action that staged it; once its document is
 * built, the document's header, digest and signature (the sections in `snapshot_contents`), and
 * once the hot path holds it, when it was published and when every instance applied it.
 */
@Entity({ name: 'snapshot_versions' })
export class SnapshotVersion {
  @PrimaryColumn({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @PrimaryColumn({ name: 'version', type: 'integer' })
  version: number;

  @Column({ name: 'cause', type: 'text', nullable: true })
  cause: string | null;

  @Column({ name: 'staged_at', type: 'timestamptz', precision: 3, default: () => 'now()' })
  stagedAt: Date;

  @Column({ name: 'env', type: 'text', nullable: true })
  env: string | null;

  @Column({ name: 'generated_at', type: 'timestamptz', precision: 3, nullable: true })
  generatedAt: Date | null;

  @Column({ name: 'content_hash', type: 'text', nullable: true })
  contentHash: string | null;

  @Column({ name: 'digest', type: 'text', nullable: true })
  digest: string | null;

  @Column({ name: 'kid', type: 'text', nullable: true })
  kid: string | null;

  @Column({ name: 'signature', type: 'text', nullable: true })
  signature: string | null;

  @Column({ name: 'size', type: 'integer', nullable: true })
  size: number | null;

  @Column({ name: 'published_at', type: 'timestamptz', precision: 3, nullable: true })
  publishedAt: Date | null;

  @Column({ name: 'converged_at', type: 'timestamptz', precision: 3, nullable: true })
  convergedAt: Date | null;
}
