import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * `control_signing_public_keys`: every Ed25519 public key control has signed with or published,
 * recorded by a replica before it uses it; those no longer live are the retired set (docs/audit.md).
 */
@Entity({ name: 'control_signing_public_keys' })
export class ControlSigningPublicKey {
  /** RFC 7638 thumbprint of the key. */
  @PrimaryColumn({ name: 'kid', type: 'text' })
  kid: string;

  /** The public key, base64url (RFC 8037 `x`). */
  @Column({ name: 'x', type: 'text' })
  x: string;

  @Column({ name: 'first_seen_at', type: 'timestamptz', precision: 3 })
  firstSeenAt: Date;
}
