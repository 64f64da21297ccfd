import { Inject, Injectable } from '@nestjs/common';
import { createHash, randomBytes } from 'node:crypto';
import { WorkspaceContext } from 'src/platform/access/context';
import { sha256Hex } from 'src/common/crypto/crypto';
import { formatTimeRequired } from 'src/common/time/time';
import { APP_CONFIG, AppConfig } from 'src/config/config';
import { Tx } from 'src/database/transaction';
import { BrokerLane } from 'src/modules/catalog/catalog.schema';
import { CatalogService } from 'src/modules/catalog/catalog.service';
import { ConnectionRow, Next } from 'src/modules/connections/dto/connection.document';
import { HandshakesRepository } from 'src/modules/connections/handshakes.repository';

/** OAuth states and catalog sessions live ten minutes. */
export const HANDSHAKE_TTL_MS = 10 * 60 * 1000;

/** PKCE S256 challenge of a verifier. */
export function codeChallenge(verifier: string): string {
  return createHash('sha256').update(verifier).digest('base64url');
}

/**
 * The operator's next step after a start or reconnect: an OAuth authorization (a single-use state
 * and a PKCE verifier, stored by digest and verifier only), a broker catalog session, or a key form.
 */
@Injectable()
export class HandshakesService {
  constructor(
    private readonly handshakes: HandshakesRepository,
    private readonly catalog: CatalogService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /** The handshake the operator needs next for the (locked) connection. */
  async prepareNext(tx: Tx, ws: WorkspaceContext, row: ConnectionRow): Promise<Next> {
    const expiresAt = new Date(Date.now() + HANDSHAKE_TTL_MS);
    const profile = row.auth_profile;
    switch (profile.type) {
      case 'api_key':
        return { kind: 'restricted_key' };
      case 'oauth2': {
        const state = randomBytes(32).toString('base64url');
        const verifier = randomBytes(32).toString('base64url');
        await this.handshakes.insertState(tx.manager, {
          stateHash: sha256Hex(state),
          workspaceId: ws.id,
          connectionId: row.id,
          userId: ws.operator.userId,
          codeVerifier: verifier,
          credentialRevision: row.credential_revision,
          expiresAt,
        });
        const url = new URL(profile.authorize_url);
        url.searchParams.set('client_id', profile.client_id);
        url.searchParams.set('redirect_uri', this.redirectUri());
        url.searchParams.set('scope', profile.scope);
        url.searchParams.set('state', state);
        url.searchParams.set('code_challenge', codeChallenge(verifier));
        url.searchParams.set('code_challenge_method', 'S256');
        url.searchParams.set('response_type', 'code');
        return { kind: 'redirect', url: url.toString(), expires_at: formatTimeRequired(expiresAt) };
      }
      case 'federated': {
        const sessionId = `cxs_${randomBytes(16).toString('hex')}`;
        const source = this.catalog.source(row.connector_slug, row.source)!;
        await this.handshakes.insertSession(tx.manager, {
          id: sessionId,
          workspaceId: ws.id,
          connectionId: row.id,
          userId: ws.operator.userId,
          provider: row.source,
          upstreamId: source.upstream_id,
          allowedMcpOrigins: source.allowed_mcp_origins,
          expiresAt,
        });
        const url = new URL(this.catalog.lane(row.source as BrokerLane).connect_url);
        url.searchParams.set('session', sessionId);
        url.searchParams.set('connector', source.upstream_id);
        return { kind: 'catalog_redirect', url: url.toString(), expires_at: formatTimeRequired(expiresAt), catalog_session_id: sessionId };
      }
      case 'broker_api_key':
        return { kind: 'none' };
    }
  }

  /** Outstanding OAuth states and unconsumed catalog sessions of a connection are superseded. */
  drop(tx: Tx, connectionId: string): Promise<void> {
    return this.handshakes.dropOutstanding(tx.manager, connectionId);
  }

  redirectUri(): string {
    return `${this.config.publicUrl}/oauth/callback`;
  }
}
