import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * `control_signing_keys`: the Ed25519 key generated at first start when `CONTROL_SIGNING_KEY` is
 * unset outside production (refused in production, so a production key never lives here).
 */
@Entity({ name: 'control_signing_keys' })
export class ControlSigningKey {
  @PrimaryColumn({ name: 'kid', type: 'text' })
  kid: string;

  @Column({ name: 'private_key_pem', type: 'text' })
  privateKeyPem: string;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;
}
