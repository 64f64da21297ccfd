import { Column, Entity, PrimaryColumn } from 'typeorm';

/** `audit_checkpoints`: a signed chain head, `{workspace_id, seq, chain_hash, signed_at}` as a compact JWS. */
@Entity({ name: 'audit_checkpoints' })
export class AuditCheckpoint {
  @PrimaryColumn({ name: 'workspace_id', type: 'text' })
  workspaceId: string;

  @PrimaryColumn({ name: 'seq', type: 'bigint' })
  seq: string;

  @Column({ name: 'chain_hash', type: 'text' })
  chainHash: string;

  @Column({ name: 'signed_at', type: 'timestamptz', precision: 3 })
  signedAt: Date;

  @Column({ name: 'jws', type: 'text' })
  jws: string;
}
