import { Column, Entity, PrimaryColumn } from 'typeorm';

/** `snapshot_contents`: the sections of published snapshots (canonical JSON), stored once per distinct content. */
@Entity({ name: 'snapshot_contents' })
export class SnapshotContent {
  @PrimaryColumn({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @PrimaryColumn({ name: 'content_hash', type: 'text' })
  contentHash: string;

  @Column({ name: 'body', type: 'text' })
  body: string;
}
