import { SigningKeysRepository } from 'src/platform/signing/signing-keys.repository';
import { openRepositoryDatabase, RepositoryDatabase } from 'test/support/repository-database';

/** A 43-character base64url `x`, as an Ed25519 public key has. */
const x = (c: string) => c.repeat(43);

describe('SigningKeysRepository', () => {
  let db: RepositoryDatabase;
  let repo: SigningKeysRepository;

  beforeAll(async () => {
    db = await openRepositoryDatabase();
    repo = new SigningKeysRepository(db.dataSource);
  });
  afterAll(() => db.close());

  it('has no key at first; keeps the oldest generated key (a second insert of a kid is ignored)', async () => {
    expect(await repo.oldestKey()).toBeUndefined();
    await repo.insertKey('kid-a', 'pem-a');
    await repo.insertKey('kid-a', 'pem-other');
    await new Promise((resolve) => setTimeout(resolve, 5));
    await repo.insertKey('kid-b', 'pem-b');
    expect(await repo.oldestKey()).toEqual({ kid: 'kid-a', privateKeyPem: 'pem-a' });
  });

  it('records public keys once, oldest first, keeping the first sighting', async () => {
    expect(await repo.publicKeys()).toEqual([]);
    await repo.recordPublicKeys([]);
    await repo.recordPublicKeys([{ kid: 'k1', x: x('a') }]);
    await new Promise((resolve) => setTimeout(resolve, 5));
    await repo.recordPublicKeys([
      { kid: 'k2', x: x('b') },
      { kid: 'k1', x: x('c') },
    ]);
    expect(await repo.publicKeys()).toEqual([
      { kid: 'k1', x: x('a') },
      { kid: 'k2', x: x('b') },
    ]);
  });
});
