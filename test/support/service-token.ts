import { JwtPayload, verify } from 'jsonwebtoken';
import { serviceClaimsAccepted } from 'src/platform/auth/service-token';

/** What a peer (the gateway, the orchestrator) checks on a service JWT control sent it: the same rules control applies to the gateway's. */
export function verifyServiceToken(token: string, secret: string, issuer: string, audience: string): boolean {
  try {
    const payload = verify(token, secret, { algorithms: ['HS256'], issuer, audience }) as JwtPayload;
    return serviceClaimsAccepted(payload, Math.floor(Date.now() / 1000));
  } catch {
    return false;
  }
}
