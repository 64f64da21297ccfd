import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { Env } from 'src/platform/access/context';

/** `workspaces`: A workspace, with its publication counters (`snapshot_version` requested, `published_version` held by the hot path). */
@Entity({ name: 'workspaces' })
export class Workspace {
  @PrimaryColumn({ name: 'id', type: 'text' })
  id: string;

  @Column({ name: 'org_id', type: 'text' })
  orgId: string;

  @Column({ name: 'slug', type: 'text' })
  slug: string;

  @Column({ name: 'env', type: 'text' })
  env: Env;

  @Column({ name: 'frozen', type: 'boolean' })
  frozen: boolean;

  @Column({ name: 'assistant_enabled', type: 'boolean' })
  assistantEnabled: boolean;

  @Column({ name: 'snapshot_version', type: 'integer' })
  snapshotVersion: number;

  @Column({ name: 'published_version', type: 'integer' })
  publishedVersion: number;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;
}
