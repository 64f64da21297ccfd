import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Every public key control has signed with or published (issue 29): a replica records its keys
 * (current, previous, next) at start, before it signs with any of them. The ones no longer live
 * are the retired set, published for verification only (docs/audit.md). Public keys only: a
 * private key never lives here.
 */
export class SigningPublicKeys1763769729000 implements MigrationInterface {
  name = 'SigningPublicKeys1763769729000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE control_signing_public_keys (
        kid text PRIMARY KEY,
        x text NOT NULL CHECK (x ~ '^[A-Za-z0-9_-]{43}$'),
        first_seen_at timestamptz(3) NOT NULL DEFAULT clock_timestamp()
      )
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE control_signing_public_keys`);
  }
}
