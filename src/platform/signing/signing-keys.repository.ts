import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { ControlSigningKey } from 'src/platform/signing/control-signing-key.entity';
import { ControlSigningPublicKey } from 'src/platform/signing/control-signing-public-key.entity';

/** `control_signing_keys` (the generated development key) and `control_signing_public_keys` (every key used). */
@Injectable()
export class SigningKeysRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** The oldest stored private key (created_at, then kid); undefined when none is stored. */
  async oldestKey(): Promise<{ kid: string; privateKeyPem: string } | undefined> {
    const [row] = await this.dataSource.manager.find(ControlSigningKey, {
      select: { kid: true, privateKeyPem: true },
      order: { createdAt: 'ASC', kid: 'ASC' },
      take: 1,
    });
    return row ? { kid: row.kid, privateKeyPem: row.privateKeyPem } : undefined;
  }

  /** Stores a generated key unless one with its kid exists (ON CONFLICT DO NOTHING). */
  async insertKey(kid: string, privateKeyPem: string): Promise<void> {
    await this.dataSource.manager.createQueryBuilder().insert().into(ControlSigningKey).values({ kid, privateKeyPem }).orIgnore().execute();
  }

  /** Records public keys, keeping the first sighting of those already recorded (ON CONFLICT DO NOTHING). */
  async recordPublicKeys(keys: { kid: string; x: string }[]): Promise<void> {
    if (keys.length === 0) return;
    await this.dataSource.manager.createQueryBuilder().insert().into(ControlSigningPublicKey).values(keys).orIgnore().execute();
  }

  /** Every recorded public key, oldest first. */
  async publicKeys(): Promise<{ kid: string; x: string }[]> {
    const rows = await this.dataSource.manager.find(ControlSigningPublicKey, { order: { firstSeenAt: 'ASC', kid: 'ASC' } });
    return rows.map((r) => ({ kid: r.kid, x: r.x }));
  }
}
