import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager, In } from 'typeorm';
import { newId } from 'src/common/ids/ids';
import { namedQuery } from 'src/database/named-query';
import { User } from 'src/modules/identity/entities/user.entity';

export interface UserRow {
  id: string;
  email: string | null;
}

// hand-written: a named statement, run on every operator request (prepared once per connection).
const FIND_USER = { name: 'user_by_subject', text: `SELECT id, email FROM users WHERE issuer = $1 AND subject = $2` };
// hand-written: ON CONFLICT upsert, race-safe first sight (or a changed e-mail) in one statement.
const UPSERT_USER = `INSERT INTO users (id, issuer, subject, email) VALUES ($1, $2, $3, $4)
  ON CONFLICT (issuer, subject) DO UPDATE SET email = EXCLUDED.email
  RETURNING id, email`;

/** `users` (owned by identity). Exported: the workspace API and the demo seeder read users' existence and e-mails here. */
@Injectable()
export class UsersRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** The user known by (issuer, subject); undefined at first sight. */
  async bySubject(issuer: string, subject: string): Promise<UserRow | undefined> {
    const [row] = await namedQuery<UserRow>(this.dataSource, FIND_USER, [issuer, subject]);
    return row;
  }

  /** Creates the user, or sets its e-mail when (issuer, subject) exists; the stored row. */
  async upsert(issuer: string, subject: string, email: string | null | undefined): Promise<UserRow> {
    const [row]: UserRow[] = await this.dataSource.query(UPSERT_USER, [newId('usr'), issuer, subject, email]);
    return row;
  }

  /** Whether the user exists, read in `manager` (a caller's transaction, or the pool). */
  exists(userId: string, manager: EntityManager = this.dataSource.manager): Promise<boolean> {
    return manager.existsBy(User, { id: userId });
  }

  /** The e-mail of each of `userIds` that exists, read in `manager`. */
  async emails(userIds: string[], manager: EntityManager = this.dataSource.manager): Promise<Map<string, string | null>> {
    if (userIds.length === 0) return new Map();
    const rows = await manager.find(User, { select: { id: true, email: true }, where: { id: In(userIds) } });
    return new Map(rows.map((r) => [r.id, r.email]));
  }
}
