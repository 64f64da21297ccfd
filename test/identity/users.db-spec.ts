import { UsersRepository } from 'src/modules/identity/users.repository';
import { openRepositoryDatabase, RepositoryDatabase } from 'test/support/repository-database';

describe('UsersRepository', () => {
  let db: RepositoryDatabase;
  let repo: UsersRepository;

  beforeAll(async () => {
    db = await openRepositoryDatabase();
    repo = new UsersRepository(db.dataSource);
  });
  afterAll(() => db.close());

  it('finds nobody at first sight, creates a usr_ id once, and updates the e-mail on conflict (ON CONFLICT upsert)', async () => {
    expect(await repo.bySubject('https://issuer.test', 'alice')).toBeUndefined();
    const created = await repo.upsert('https://issuer.test', 'alice', 'a@example.test');
    expect(created).toEqual({ id: expect.stringMatching(/^usr_/), email: 'a@example.test' });
    const again = await repo.upsert('https://issuer.test', 'alice', 'new@example.test');
    expect(again).toEqual({ id: created.id, email: 'new@example.test' });
    expect(await repo.bySubject('https://issuer.test', 'alice')).toEqual(again);
    // Another issuer's subject is another user.
    expect((await repo.upsert('https://other.test', 'alice', null)).id).not.toBe(created.id);
    expect(await db.dataSource.query(`SELECT count(*)::int AS n FROM users WHERE subject = 'alice'`)).toEqual([{ n: 2 }]);
  });

  it('answers existence and e-mails, inside a transaction too', async () => {
    const a = await repo.upsert('https://issuer.test', 'bob', 'b@example.test');
    const b = await repo.upsert('https://issuer.test', 'carol', null);
    expect(await repo.exists(a.id)).toBe(true);
    expect(await repo.exists('usr_missing')).toBe(false);
    expect(await repo.emails([a.id, b.id, 'usr_missing'])).toEqual(new Map([[a.id, 'b@example.test'], [b.id, null]]));
    expect(await repo.emails([])).toEqual(new Map());
    expect(await db.dataSource.transaction((m) => repo.exists(a.id, m))).toBe(true);
  });
});
