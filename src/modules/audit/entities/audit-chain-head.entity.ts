import { Column, Entity, PrimaryColumn } from 'typeorm';

/** `audit_chain_heads`: the last link of a workspace's audit chain; the audit writer locks it (docs/audit.md). */
@Entity({ name: 'audit_chain_heads' })
export class AuditChainHead {
  @PrimaryColumn({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @Column({ name: 'seq', type: 'bigint' })
  seq: string;

  @Column({ name: 'chain_hash', type: 'text' })
  chainHash: string;
}
