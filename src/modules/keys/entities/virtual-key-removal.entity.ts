import { Column, Entity, PrimaryColumn } from 'typeorm';

/** `virtual_key_removals`: a digest that must be absent from the hot path from `due_at` on (the key-sync job deletes it, then the row). */
@Entity({ name: 'virtual_key_removals' })
export class VirtualKeyRemoval {
  @PrimaryColumn({ name: 'key_hash', type: 'text' })
  keyHash: string;

  @Column({ name: 'key_id', type: 'text' })
  keyId: string;

  @Column({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @Column({ name: 'due_at', type: 'timestamptz', precision: 3 })
  dueAt: Date;
}
