import { Column, Entity, PrimaryColumn } from 'typeorm';

/** `virtual_key_usage`: the latest `occurred_at` of the key's usage events (the usage projection writes it, never backwards). */
@Entity({ name: 'virtual_key_usage' })
export class VirtualKeyUsage {
  @PrimaryColumn({ name: 'key_id', type: 'text' })
  keyId: string;

  @Column({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @Column({ name: 'last_used_at', type: 'timestamptz', precision: 3 })
  lastUsedAt: Date;
}
