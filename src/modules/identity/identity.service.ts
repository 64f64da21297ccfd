import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { OperatorContext } from 'src/platform/access/context';
import { Identity, OperatorResolver } from 'src/platform/auth/session.strategy';
import { newId } from 'src/common/ids/ids';
import { namedQuery } from 'src/database/named-query';

// hand-written: a named statement, run on every operator request (prepared once per connection).
const FIND_USER = { name: 'user_by_subject', text: `SELECT id, email FROM users WHERE issuer = $1 AND subject = $2` };

/** Users keyed by (issuer, sub), with control's own `usr_` id created on first sight. */
@Injectable()
export class IdentityService implements OperatorResolver {
  constructor(private readonly dataSource: DataSource) {}

  async resolve(claims: Identity): Promise<OperatorContext> {
    const [found] = await namedQuery<{ id: string; email: string | null }>(this.dataSource, FIND_USER, [claims.issuer, claims.subject]);
    if (found && found.email === claims.email) return { userId: found.id, email: found.email };
    // First sight, or the e-mail changed at the identity provider: one race-safe upsert.
    const [row] = await this.dataSource.query(
      `INSERT INTO users (id, issuer, subject, email) VALUES ($1, $2, $3, $4)
       ON CONFLICT (issuer, subject) DO UPDATE SET email = EXCLUDED.email
       RETURNING id, email`,
      [newId('usr'), claims.issuer, claims.subject, claims.email],
    );
    return { userId: row.id, email: row.email };
  }
}
