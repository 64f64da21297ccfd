import { Inject, Injectable } from '@nestjs/common';
import { isRole, roleGrants } from 'src/platform/access/actions';
import { WorkspaceContext } from 'src/platform/access/context';
import { WorkspaceAccess } from 'src/platform/access/workspace-access.service';
import { sha256Hex } from 'src/common/crypto/crypto';
import { ApiError } from 'src/common/http/errors';
import { APP_CONFIG, AppConfig } from 'src/config/config';
import { ConnectionSteps } from 'src/modules/connections/connection-steps.service';
import { ConnectionsRepository } from 'src/modules/connections/connections.repository';
import { ConnectionRow } from 'src/modules/connections/dto/connection.document';
import { HandshakesRepository, RedeemedState } from 'src/modules/connections/handshakes.repository';
import { HandshakesService } from 'src/modules/connections/handshakes.service';
import { ExchangedCredential, GatewayClient } from 'src/modules/gateway/gateway.client';
import { PublicationService } from 'src/modules/publication/publication.service';
import { WorkspacesService } from 'src/modules/workspaces/workspaces.service';

export const INVALID_STATE = 'invalid or expired oauth state';
const STATE = /^[A-Za-z0-9_-]{43}$/;
const CODE = /^[\x21-\x7e]{1,2048}$/;

type StateRow = RedeemedState;

interface Authority {
  ctx: WorkspaceContext;
  row: ConnectionRow;
}

export type CallbackStatus = 'connected' | 'pending' | 'error';

/**
 * The vendor's redirect back to control. The state row is consumed (deleted) and committed first,
 * so a state works once whatever happens next. Authority is re-derived from the row, never from
 * the browser: the initiating operator must still exist, be a member and hold `connection.manage`,
 * and the connection must still wait for this very authorization. Every failure after the state
 * check is the same `status=error`.
 */
@Injectable()
export class OAuthService {
  constructor(
    private readonly connections: ConnectionsRepository,
    private readonly states: HandshakesRepository,
    private readonly handshakes: HandshakesService,
    private readonly steps: ConnectionSteps,
    private readonly access: WorkspaceAccess,
    private readonly publications: PublicationService,
    private readonly gateway: GatewayClient,
    private readonly workspaces: WorkspacesService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /** The dashboard URL to redirect to; 400 `invalid or expired oauth state` when the state does not redeem. */
  async callback(query: Record<string, unknown>): Promise<string> {
    const state = query.state;
    if (typeof state !== 'string' || !STATE.test(state)) throw new ApiError(400, INVALID_STATE);
    const consumed = await this.states.redeemState(sha256Hex(state));
    if (!consumed || consumed.expires_at.getTime() <= Date.now()) throw new ApiError(400, INVALID_STATE);
    const status = await this.complete(consumed, query.code, query.error);
    const url = new URL(`${this.config.webUrl}/dashboard/connectors`);
    url.searchParams.set('connection_id', consumed.connection_id);
    url.searchParams.set('status', status);
    return url.toString();
  }

  private async complete(state: StateRow, code: unknown, vendorError: unknown): Promise<CallbackStatus> {
    if (vendorError !== undefined || typeof code !== 'string' || !CODE.test(code)) return 'error';
    const before = await this.authority(state);
    if (!before) return 'error';
    let grant: ExchangedCredential;
    try {
      const profile = before.row.auth_profile as Extract<ConnectionRow['auth_profile'], { type: 'oauth2' }>;
      grant = await this.gateway.exchange({
        workspace_id: state.workspace_id,
        connection_id: state.connection_id,
        connector_slug: before.row.connector_slug,
        code,
        code_verifier: state.code_verifier,
        redirect_uri: this.handshakes.redirectUri(),
        client_id: profile.client_id,
        client_secret_envelope: before.row.client_secret_envelope,
      });
    } catch {
      return 'error';
    }
    try {
      await this.access.mutate(before.ctx, async (tx, ws) => {
        const row = await this.steps.lockRow(tx, ws.id, state.connection_id, ['tool']);
        if (!ready(row, state)) throw new ApiError(409, 'connection is not pending');
        await this.connections.activateCredential(tx.manager, ws.id, row.id, {
          kind: 'oauth',
          envelope: grant.envelope,
          refreshEnvelope: grant.refresh_envelope,
          expiresAt: grant.expires_at,
          last4: grant.last4,
        });
        await this.steps.record(tx, ws, 'connection.credential.store', { ...row, status: 'active' }, { last4: grant.last4 ?? undefined });
        await this.publications.stage(tx, ws.id, 'connection.credential.store');
      });
    } catch (error) {
      // Authority lost while the code was exchanged (membership, role, freeze, connection state).
      if (error instanceof ApiError) return 'error';
      throw error;
    }
    const versions = await this.publications.versions(state.workspace_id);
    return versions.published_version >= versions.snapshot_version ? 'connected' : 'pending';
  }

  /** The initiating operator's context if they may still complete this authorization, else null. */
  private async authority(state: StateRow): Promise<Authority | null> {
    const member = await this.workspaces.memberAccess(state.workspace_id, state.user_id);
    if (!member || !isRole(member.role) || !roleGrants(member.role, 'connection.manage') || member.frozen) return null;
    const row = await this.connections.find(state.workspace_id, state.connection_id, ['tool']);
    if (!row || !ready(row, state)) return null;
    const ctx = { id: state.workspace_id, operator: { userId: state.user_id, email: member.email }, action: 'connection.manage' } as WorkspaceContext;
    return { ctx, row };
  }
}

/** The connection still waits for exactly the authorization this state was issued for. */
function ready(row: ConnectionRow, state: StateRow): boolean {
  return row.status === 'pending' && row.auth_profile.type === 'oauth2' && row.credential_revision === state.credential_revision;
}
