import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager, IsNull, LessThan } from 'typeorm';
import { CatalogSession } from 'src/modules/connections/entities/catalog-session.entity';
import { OAuthState } from 'src/modules/connections/entities/oauth-state.entity';

/** An OAuth state as the callback redeems it. */
export interface RedeemedState {
  workspace_id: string;
  connection_id: string;
  user_id: string;
  code_verifier: string;
  credential_revision: number;
  expires_at: Date;
}

/** The caller's pending catalog session on a connection. */
export interface PendingSession {
  id: string;
  connection_id: string;
  expires_at: Date;
}

/**
 * Every statement on the two handshake tables, `oauth_states` (an OAuth authorization in flight,
 * its PKCE verifier) and `catalog_sessions` (a broker catalog session). Both are single use and
 * live ten minutes.
 */
@Injectable()
export class HandshakesRepository {
  constructor(private readonly dataSource: DataSource) {}

  async insertState(manager: EntityManager, state: Omit<OAuthState, 'createdAt'>): Promise<void> {
    await manager.insert(OAuthState, state);
  }

  /** Deletes the state and returns what it held: a state redeems once, whatever happens next. */
  async redeemState(stateHash: string): Promise<RedeemedState | undefined> {
    // hand-written: DELETE ... RETURNING, the single-use redemption in one statement (two callbacks cannot both redeem)
    const [rows]: [RedeemedState[], number] = await this.dataSource.query(
      `DELETE FROM oauth_states WHERE state_hash = $1 RETURNING workspace_id, connection_id, user_id, code_verifier, credential_revision, expires_at`,
      [stateHash],
    );
    return rows[0];
  }

  async insertSession(manager: EntityManager, session: Omit<CatalogSession, 'createdAt' | 'consumedAt'>): Promise<void> {
    await manager.insert(CatalogSession, session);
  }

  /** The reviewed MCP origins of an unconsumed, unexpired session matching every given key; undefined when none does. */
  async openSessionOrigins(key: { id: string; workspaceId: string; connectionId: string; userId: string; provider: string }): Promise<string[] | undefined> {
    // hand-written: expiry compared on the database clock (clock_timestamp()), not the replica's
    const [row]: { allowed_mcp_origins: string[] }[] = await this.dataSource.query(
      `SELECT allowed_mcp_origins FROM catalog_sessions WHERE id = $1 AND workspace_id = $2 AND connection_id = $3 AND user_id = $4 AND provider = $5
         AND consumed_at IS NULL AND expires_at > clock_timestamp()`,
      [key.id, key.workspaceId, key.connectionId, key.userId, key.provider],
    );
    return row?.allowed_mcp_origins;
  }

  /**
   * The user's unconsumed, unexpired sessions on `connectionIds` whose provider is still the
   * connection's current lane, oldest first.
   */
  async pendingSessions(workspaceId: string, connectionIds: string[], userId: string): Promise<PendingSession[]> {
    // hand-written: joins the connection (same module) to compare the session's provider with its current lane,
    // expiry on the database clock
    return this.dataSource.query(
      `SELECT s.id, s.connection_id, s.expires_at FROM catalog_sessions s JOIN connections c ON c.id = s.connection_id AND c.workspace_id = s.workspace_id
       WHERE s.workspace_id = $1 AND s.connection_id = ANY($2) AND s.user_id = $3 AND s.consumed_at IS NULL AND s.expires_at > clock_timestamp()
         AND s.provider = c.source ORDER BY s.created_at`,
      [workspaceId, connectionIds, userId],
    );
  }

  /** Outstanding OAuth states and unconsumed catalog sessions of a connection are superseded. */
  async dropOutstanding(manager: EntityManager, connectionId: string): Promise<void> {
    await manager.delete(OAuthState, { connectionId });
    await manager.delete(CatalogSession, { connectionId, consumedAt: IsNull() });
  }

  /** Deletes states and sessions that expired before `cutoff`; how many rows went. */
  async purgeExpired(cutoff: Date): Promise<number> {
    const states = await this.dataSource.manager.delete(OAuthState, { expiresAt: LessThan(cutoff) });
    const sessions = await this.dataSource.manager.delete(CatalogSession, { expiresAt: LessThan(cutoff) });
    return (states.affected ?? 0) + (sessions.affected ?? 0);
  }
}
