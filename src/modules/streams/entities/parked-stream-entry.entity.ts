import { Column, Entity, PrimaryColumn } from 'typeorm';

/** `stream_parked`: A malformed stream entry: kept, acknowledged, never retried. */
@Entity({ name: 'stream_parked' })
export class ParkedStreamEntry {
  @PrimaryColumn({ name: 'stream', type: 'text' })
  stream: string;

  @PrimaryColumn({ name: 'entry_id', type: 'text' })
  entryId: string;

  @Column({ name: 'workspace_id', type: 'text', nullable: true })
  workspaceId: string | null;

  @Column({ name: 'reason', type: 'text' })
  reason: string;

  @Column({ name: 'data', type: 'text', nullable: true })
  data: string | null;

  @Column({ name: 'parked_at', type: 'timestamptz', precision: 3 })
  parkedAt: Date;
}
