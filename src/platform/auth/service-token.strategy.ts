import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import { JwtPayload } from 'jsonwebtoken';
import { Strategy } from 'passport-jwt';
import { bearerOf } from 'src/platform/auth/bearer';
import { registerStrategy, unregisterStrategy } from 'src/platform/auth/passport-registry';
import { serviceClaimsAccepted } from 'src/platform/auth/service-token';
import { APP_CONFIG, AppConfig } from 'src/config/config';

/**
 * The gateway's service JWT (passport-jwt): HS256 from `gateway` to `control`, then
 * `serviceClaimsAccepted`. One passport strategy per accepted secret, current first, then the
 * previous one while a rotation is under way (SERVICE_JWT_SECRET_PREVIOUS); none when
 * SERVICE_JWT_SECRET is unset. A verified token yields the epoch ms it expires at.
 */
@Injectable()
export class ServiceTokenStrategy implements OnModuleDestroy {
  readonly names: string[];

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    const secrets = config.serviceJwtSecret ? [config.serviceJwtSecret, config.serviceJwtPreviousSecret] : [];
    this.names = secrets.filter((secret) => secret !== undefined).map((secret) => registerStrategy('service-token', ServiceTokenStrategy.accepting(secret)));
  }

  private static accepting(secret: string): Strategy {
    return new Strategy(
      {
        jwtFromRequest: bearerOf,
        secretOrKey: secret,
        algorithms: ['HS256'],
        issuer: 'gateway',
        audience: 'control',
      },
      (payload: JwtPayload, done: (error: unknown, expiresAt?: number | false) => void) =>
        done(null, serviceClaimsAccepted(payload, Math.floor(Date.now() / 1000)) && payload.exp! * 1000),
    );
  }

  onModuleDestroy(): void {
    for (const name of this.names) unregisterStrategy(name);
  }
}
