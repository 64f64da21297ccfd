import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import { JwtHeader, JwtPayload } from 'jsonwebtoken';
import { Strategy } from 'passport-jwt';
import { OperatorContext } from 'src/platform/access/context';
import { bearerOf } from 'src/platform/auth/bearer';
import { IssuerKeys } from 'src/platform/auth/issuer-keys';
import { registerStrategy, unregisterStrategy } from 'src/platform/auth/passport-registry';
import { APP_CONFIG, AppConfig } from 'src/config/config';
import { isStorableText } from 'src/common/http/text';

/** Who a verified session names: the (issuer, sub) pair a user row is keyed by, and the e-mail to refresh. */
export interface Identity {
  issuer: string;
  subject: string;
  email: string | null;
}

/** Maps verified session claims to control's own user (created on first sight). */
export interface OperatorResolver {
  resolve(identity: Identity): Promise<OperatorContext>;
}
export const OPERATOR_RESOLVER = Symbol('OPERATOR_RESOLVER');

/** A session that passed verification, and until when (epoch ms) it may be accepted without verifying it again. */
export interface VerifiedSession {
  operator: OperatorContext;
  rememberedUntil: number;
}

export const SESSION_CLOCK_LEEWAY_S = 30;

/**
 * The rules a session token must meet beyond its RS256 signature, exact `iss` and `exp` with the
 * leeway (checked by jsonwebtoken): a `kid` header, `exp` and a non-empty `sub` present, a
 * numeric `iat` when there is one, and `azp` in the allow-list when one is configured. The claims
 * control keeps (`sub`, `email`: the user row, every audit row's actor) must be text PostgreSQL
 * stores and a hash takes losslessly (no NUL, no lone surrogate), like any client input: a token
 * carrying other text is refused like any bad token, never stored altered.
 */
export function sessionIdentity(header: JwtHeader, payload: JwtPayload, issuer: string, authorizedParties: readonly string[]): Identity | null {
  if (typeof header.kid !== 'string' || typeof payload.exp !== 'number' || typeof payload.sub !== 'string' || payload.sub.length === 0 || !isStorableText(payload.sub)) return null;
  if (typeof payload.email === 'string' && !isStorableText(payload.email)) return null;
  if (payload.iat !== undefined && typeof payload.iat !== 'number') return null;
  if (authorizedParties.length > 0 && (typeof payload.azp !== 'string' || !authorizedParties.includes(payload.azp))) return null;
  return { issuer, subject: payload.sub, email: typeof payload.email === 'string' ? payload.email : null };
}

/** A verified session is remembered until its own `exp` plus the leeway, and never past the moment the key set that vouched for its key goes stale. */
export function sessionRememberedUntil(expS: number, keySetStaleAt: number): number {
  return Math.min((expS + SESSION_CLOCK_LEEWAY_S) * 1000, keySetStaleAt);
}

/**
 * Operator sessions (passport-jwt): RS256 only, the key by `kid` from the issuer's JWKS
 * (IssuerKeys), `iss` exact, 30 s leeway, then `sessionIdentity`; the operator is resolved
 * through OPERATOR_RESOLVER. Registered with passport under `name`.
 */
@Injectable()
export class SessionStrategy implements OnModuleDestroy {
  readonly name: string;

  constructor(keys: IssuerKeys, @Inject(OPERATOR_RESOLVER) operators: OperatorResolver, @Inject(APP_CONFIG) config: AppConfig) {
    const issuer = config.identityIssuer;
    const strategy = new Strategy(
      {
        jwtFromRequest: bearerOf,
        secretOrKeyProvider: keys.secretOrKeyProvider,
        algorithms: ['RS256'],
        issuer,
        jsonWebTokenOptions: { clockTolerance: SESSION_CLOCK_LEEWAY_S, complete: true },
        passReqToCallback: true,
      },
      (_request: unknown, verified: { header: JwtHeader; payload: JwtPayload }, done: (error: unknown, session?: VerifiedSession | false) => void) => {
        const identity = issuer === undefined ? null : sessionIdentity(verified.header, verified.payload, issuer, config.authorizedParties);
        if (!identity) return done(null, false);
        operators.resolve(identity).then(
          (operator) => done(null, { operator, rememberedUntil: sessionRememberedUntil(verified.payload.exp!, keys.listedUntil(verified.header.kid!)) }),
          (error: unknown) => done(error),
        );
      },
    );
    this.name = registerStrategy('session', strategy);
  }

  onModuleDestroy(): void {
    unregisterStrategy(this.name);
  }
}
