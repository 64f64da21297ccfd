import { Injectable } from '@nestjs/common';
import { OperatorContext } from 'src/platform/access/context';
import { Identity, OperatorResolver } from 'src/platform/auth/session.strategy';
import { UsersRepository } from 'src/modules/identity/users.repository';

/** Users keyed by (issuer, sub), with control's own `usr_` id created on first sight. */
@Injectable()
export class IdentityService implements OperatorResolver {
  constructor(private readonly users: UsersRepository) {}

  async resolve(claims: Identity): Promise<OperatorContext> {
    const found = await this.users.bySubject(claims.issuer, claims.subject);
    if (found && found.email === claims.email) return { userId: found.id, email: found.email };
    // First sight, or the e-mail changed at the identity provider: one race-safe upsert.
    const row = await this.users.upsert(claims.issuer, claims.subject, claims.email);
    return { userId: row.id, email: row.email };
  }
}
