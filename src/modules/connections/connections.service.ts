import { Inject, Injectable } from '@nestjs/common';
import { createHash, randomBytes } from 'node:crypto';
import { DataSource, EntityManager } from 'typeorm';
import { roleGrants } from 'src/platform/access/actions';
import { WorkspaceContext } from 'src/platform/access/context';
import { WorkspaceAccess } from 'src/platform/access/workspace-access.service';
import { canonicalJson, sha256Hex, sha256Tagged } from 'src/common/crypto/crypto';
import { ApiError } from 'src/common/http/errors';
import { newId } from 'src/common/ids/ids';
import { formatTimeRequired } from 'src/common/time/time';
import { APP_CONFIG, AppConfig } from 'src/config/config';
import { Tx } from 'src/database/transaction';
import { AuditAction } from 'src/modules/audit/audit-vocabulary';
import { AuditService } from 'src/modules/audit/audit.service';
import { BrokerLane, CatalogConnector } from 'src/modules/catalog/catalog.schema';
import { CatalogService } from 'src/modules/catalog/catalog.service';
import {
  AuthProfile,
  CONNECTION_COLUMNS,
  ConnectionDocument,
  ConnectionRow,
  NATIVE_CUSTODY,
  Next,
  PendingCatalogSession,
  tierOf,
  toConnectionDocument,
  toMutationEnvelope,
  Versions,
} from 'src/modules/connections/dto/connection.document';
import { CatalogProviderDto, FederatedCompleteDto, ReconnectDto, StartConnectionDto } from 'src/modules/connections/dto/connection.dto';
import { GatewayClient, SecretKind } from 'src/modules/gateway/gateway.client';
import { PublicationService } from 'src/modules/publication/publication.service';

/** OAuth states and catalog sessions live ten minutes. */
export const HANDSHAKE_TTL_MS = 10 * 60 * 1000;
export const LIVE_KEY_REFUSED = 'full live keys are refused; use a restricted key';
const NOT_FOUND = 'connection not found';
const SESSION_UNAVAILABLE = 'catalog session is not available';

/** What a mutation prepared for the operator's next step, revealed only once the snapshot has published. */
type Prepared = Next;

/** PKCE S256 challenge of a verifier. */
export function codeChallenge(verifier: string): string {
  return createHash('sha256').update(verifier).digest('base64url');
}

/** What a webhook subscription needs to know of its tool connection (never a credential). */
export interface ToolShape {
  custody: string;
  source: string;
  target: string;
  profile_type: string;
  broker_reference: string | null;
}

/**
 * Tool connections and broker registrations: start, restricted key, reconnect, disable, purge,
 * discard, federated complete, and the projections. Every mutation runs under the workspace lock
 * (re-authorized), locks the connection row, audits in the same transaction and stages a snapshot.
 * Secrets are sealed by the gateway inside the transaction, so a gateway failure rolls back
 * everything (502, nothing half-written).
 */
@Injectable()
export class ConnectionsService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly access: WorkspaceAccess,
    private readonly audit: AuditService,
    private readonly publications: PublicationService,
    private readonly catalog: CatalogService,
    private readonly gateway: GatewayClient,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  // ---------- reads ----------

  /** `GET /connections`: every non-model connection of the workspace, oldest first. */
  async list(ws: WorkspaceContext) {
    const rows: ConnectionRow[] = await this.dataSource.query(
      `SELECT ${CONNECTION_COLUMNS} FROM connections WHERE workspace_id = $1 AND kind <> 'model' ORDER BY created_at, id`,
      [ws.id],
    );
    return { connections: await this.project(this.dataSource.manager, ws, rows, versionsOf(ws)) };
  }

  /** The workspace's tool connections grouped by connector slug (the catalog's `connections`). */
  async bySlug(ws: WorkspaceContext, slugs: string[]): Promise<Map<string, ConnectionDocument[]>> {
    const rows: ConnectionRow[] = await this.dataSource.query(
      `SELECT ${CONNECTION_COLUMNS} FROM connections WHERE workspace_id = $1 AND kind = 'tool' AND connector_slug = ANY($2) ORDER BY created_at, id`,
      [ws.id, slugs],
    );
    const docs = await this.project(this.dataSource.manager, ws, rows, versionsOf(ws));
    const out = new Map<string, ConnectionDocument[]>();
    for (const doc of docs) out.set(doc.connector_slug, [...(out.get(doc.connector_slug) ?? []), doc]);
    return out;
  }

  // ---------- mutations ----------

  async start(ctx: WorkspaceContext, body: StartConnectionDto) {
    const connector = this.catalog.require(body.slug);
    const source = connector.sources.find((s) => s.provider === body.source);
    if (!source) throw new ApiError(400, 'catalog source is not available');
    const native = source.provider === 'native';
    const profileType = native ? connector.native_profile!.type : 'federated';
    if (body.client_secret !== undefined && profileType !== 'oauth2') throw new ApiError(400, 'connection does not accept an oauth client secret');
    const clientId = profileType === 'oauth2' ? (body.client_id ?? this.config.oauthDefaultClientId) : undefined;
    if (profileType === 'oauth2' && !clientId) throw new ApiError(400, 'oauth client id is required');
    refuseLiveKey(body.client_secret);

    const { id, prepared } = await this.access.mutate(ctx, async (tx, ws) => {
      const live: ConnectionRow[] = await tx.manager.query(
        `SELECT ${CONNECTION_COLUMNS} FROM connections WHERE workspace_id = $1 AND kind = 'tool' AND connector_slug = $2 AND status IN ('pending', 'active') FOR UPDATE`,
        [ws.id, connector.slug],
      );
      const custody = native ? NATIVE_CUSTODY : 'federated';
      const shell = live[0];
      if (shell && !(shell.status === 'pending' && shell.custody === custody && shell.credential_envelope === null)) {
        throw new ApiError(409, 'connector already has a live connection');
      }
      const profile = native ? this.nativeProfile(connector, clientId) : { type: 'federated' as const, provider: source.provider, upstream_id: source.upstream_id, broker_connection_id: await this.brokerOf(tx, ws.id, source.provider as BrokerLane) };
      const id = shell?.id ?? newId('conn');
      const digest = sha256Tagged(canonicalJson(profile));
      const revision = shell?.credential_revision ?? 0;
      const clientSecretEnvelope = body.client_secret === undefined ? null : (await this.seal(ws.id, id, digest, revision, 'oauth_client_secret', body.client_secret)).envelope;
      if (shell) {
        await tx.manager.query(
          `UPDATE connections SET source = $3, custody = $4, target = $5, auth_profile = $6, auth_profile_digest = $7, client_secret_envelope = $8, updated_at = clock_timestamp()
           WHERE id = $1 AND workspace_id = $2`,
          [id, ws.id, source.provider, custody, native ? 'gateway' : 'broker', JSON.stringify(profile), digest, clientSecretEnvelope],
        );
        await this.dropHandshakes(tx, id);
      } else {
        await tx.manager.query(
          `INSERT INTO connections (id, workspace_id, kind, connector_slug, source, custody, target, status, auth_profile, auth_profile_digest, client_secret_envelope, created_by)
           VALUES ($1, $2, 'tool', $3, $4, $5, $6, 'pending', $7, $8, $9, $10)`,
          [id, ws.id, connector.slug, source.provider, custody, native ? 'gateway' : 'broker', JSON.stringify(profile), digest, clientSecretEnvelope, ws.operator.userId],
        );
      }
      const row = await this.lockRow(tx, ws.id, id, ['tool']);
      await this.record(tx, ws, 'connection.start', row);
      const prepared = await this.prepareNext(tx, ws, row);
      await this.publications.stage(tx, ws.id, 'connection.start');
      return { id, prepared };
    });
    return this.envelope(ctx, id, prepared);
  }

  async restrictedKey(ctx: WorkspaceContext, connectionId: string, apiKey: string) {
    await this.access.mutate(ctx, async (tx, ws) => {
      const row = await this.lockRow(tx, ws.id, connectionId, ['tool']);
      if (row.auth_profile.type !== 'api_key') throw new ApiError(400, 'connection is not an api_key profile');
      refuseLiveKey(apiKey);
      if (row.status !== 'pending') throw new ApiError(409, 'connection is not pending');
      // The gateway checks seals against the published snapshot: nothing is stored before it publishes.
      if (ws.publishedVersion < ws.snapshotVersion) return;
      await this.storeKey(tx, ws, row, 'api_key', apiKey);
    });
    return this.projection(ctx, connectionId);
  }

  async reconnect(ctx: WorkspaceContext, connectionId: string, body: ReconnectDto) {
    if (body.client_secret !== undefined && body.api_key !== undefined) throw new ApiError(400, 'provide only one credential');
    const prepared = await this.access.mutate(ctx, async (tx, ws) => {
      let row = await this.lockRow(tx, ws.id, connectionId, ['tool']);
      if (row.status === 'active') throw new ApiError(409, 'connection is not pending');
      const type = row.auth_profile.type;
      if (body.client_secret !== undefined && type !== 'oauth2') throw new ApiError(400, 'connection does not accept an oauth client secret');
      if (body.api_key !== undefined && type !== 'api_key') throw new ApiError(400, 'connection does not accept an api key');
      refuseLiveKey(body.client_secret ?? body.api_key);
      if (row.status === 'disabled') {
        const other = await tx.manager.query(
          `SELECT 1 FROM connections WHERE workspace_id = $1 AND kind = 'tool' AND connector_slug = $2 AND status IN ('pending', 'active') AND id <> $3`,
          [ws.id, row.connector_slug, row.id],
        );
        if (other.length > 0) throw new ApiError(409, 'connector already has a live connection');
      }
      if (row.auth_profile.type === 'federated') {
        const profile = { ...row.auth_profile, broker_connection_id: await this.brokerOf(tx, ws.id, row.source as BrokerLane) };
        await tx.manager.query(`UPDATE connections SET auth_profile = $3, auth_profile_digest = $4 WHERE id = $1 AND workspace_id = $2`, [row.id, ws.id, JSON.stringify(profile), sha256Tagged(canonicalJson(profile))]);
      }
      const revision = row.credential_revision + 1;
      const secret = body.client_secret === undefined ? row.client_secret_envelope : (await this.seal(ws.id, row.id, row.auth_profile_digest, revision, 'oauth_client_secret', body.client_secret)).envelope;
      await tx.manager.query(
        `UPDATE connections SET status = 'pending', credential_revision = $3, client_secret_envelope = $4, refresh_failure = NULL, refresh_attempts = 0,
           refresh_not_before = NULL, updated_at = clock_timestamp() WHERE id = $1 AND workspace_id = $2`,
        [row.id, ws.id, revision, secret],
      );
      await this.dropHandshakes(tx, row.id);
      row = await this.lockRow(tx, ws.id, row.id, ['tool']);
      await this.record(tx, ws, 'connection.reconnect', row);
      if (body.api_key !== undefined && ws.publishedVersion >= ws.snapshotVersion) {
        await this.storeKey(tx, ws, row, 'api_key', body.api_key);
        return { kind: 'none' } as const;
      }
      const prepared = await this.prepareNext(tx, ws, row);
      await this.publications.stage(tx, ws.id, 'connection.reconnect');
      return prepared;
    });
    return this.envelope(ctx, connectionId, prepared);
  }

  async disable(ctx: WorkspaceContext, connectionId: string) {
    await this.access.mutate(ctx, async (tx, ws) => {
      const row = await this.lockRow(tx, ws.id, connectionId, ['tool', 'catalog_provider']);
      if (row.status === 'disabled') return;
      await tx.manager.query(`UPDATE connections SET status = 'disabled', updated_at = clock_timestamp() WHERE id = $1 AND workspace_id = $2`, [row.id, ws.id]);
      await this.dropHandshakes(tx, row.id);
      await this.record(tx, ws, 'connection.disable', { ...row, status: 'disabled' });
      await this.publications.stage(tx, ws.id, 'connection.disable');
    });
    return this.projection(ctx, connectionId);
  }

  async purge(ctx: WorkspaceContext, connectionId: string) {
    await this.access.mutate(ctx, async (tx, ws) => {
      const row = await this.lockRow(tx, ws.id, connectionId, ['tool', 'catalog_provider']);
      const holds = [row.client_secret_envelope, row.credential_envelope, row.refresh_envelope, row.key_id, row.credential_scheme, row.last4, row.expires_at].some((v) => v !== null);
      if (!holds && row.status === 'disabled') return;
      await tx.manager.query(
        `UPDATE connections SET status = 'disabled', client_secret_envelope = NULL, credential_envelope = NULL, refresh_envelope = NULL, key_id = NULL,
           credential_scheme = NULL, last4 = NULL, expires_at = NULL, credential_revision = credential_revision + 1, refresh_not_before = NULL,
           updated_at = clock_timestamp() WHERE id = $1 AND workspace_id = $2`,
        [row.id, ws.id],
      );
      await this.dropHandshakes(tx, row.id);
      // The cleared last4 moves into the audit detail: the only trace of which credential was destroyed.
      await this.record(tx, ws, 'connection.credential.purge', { ...row, status: 'disabled' }, { last4: row.last4 });
      await this.publications.stage(tx, ws.id, 'connection.credential.purge');
    });
    return this.projection(ctx, connectionId);
  }

  async discard(ctx: WorkspaceContext, connectionId: string): Promise<void> {
    await this.access.mutate(ctx, async (tx, ws) => {
      const row = await this.lockRow(tx, ws.id, connectionId, ['tool', 'catalog_provider']);
      if (row.credential_revision !== 0 || row.credential_envelope !== null || row.refresh_envelope !== null || row.last4 !== null) {
        throw new ApiError(409, 'connection has held a credential and is kept as a record');
      }
      await tx.manager.query(`DELETE FROM connections WHERE id = $1 AND workspace_id = $2`, [row.id, ws.id]);
      await this.record(tx, ws, 'connection.discard', row);
      await this.publications.stage(tx, ws.id, 'connection.discard');
    });
  }

  /**
   * Registers (or re-keys) the workspace's account at a broker lane. The connection is created
   * pending and published first; only once the published snapshot covers it is the key sealed.
   */
  async registerProvider(ctx: WorkspaceContext, body: CatalogProviderDto) {
    refuseLiveKey(body.api_key);
    const id = await this.access.mutate(ctx, async (tx, ws) => {
      const live: { id: string }[] = await tx.manager.query(
        `SELECT id FROM connections WHERE workspace_id = $1 AND kind = 'catalog_provider' AND connector_slug = $2 AND status IN ('pending', 'active') FOR UPDATE`,
        [ws.id, body.provider],
      );
      if (live[0]) return live[0].id;
      const id = newId('conn');
      const profile: AuthProfile = { type: 'broker_api_key', provider: body.provider };
      await tx.manager.query(
        `INSERT INTO connections (id, workspace_id, kind, connector_slug, source, custody, target, status, auth_profile, auth_profile_digest, created_by)
         VALUES ($1, $2, 'catalog_provider', $3, $3, 'federated', 'broker', 'pending', $4, $5, $6)`,
        [id, ws.id, body.provider, JSON.stringify(profile), sha256Tagged(canonicalJson(profile)), ws.operator.userId],
      );
      await this.record(tx, ws, 'catalog.provider.register', await this.lockRow(tx, ws.id, id, ['catalog_provider']));
      await this.publications.stage(tx, ws.id, 'catalog.provider.register');
      return id;
    });
    await this.access.mutate(ctx, async (tx, ws) => {
      const row = await this.lockRow(tx, ws.id, id, ['catalog_provider']);
      if (ws.publishedVersion < ws.snapshotVersion || row.status === 'disabled') return;
      await this.storeKey(tx, ws, row, 'broker_api_key', body.api_key);
    });
    return this.envelope(ctx, id, { kind: 'none' });
  }

  /**
   * Validates every input as specified, then refuses: the broker's hosted connection cannot be
   * verified, so nothing is consumed and nothing is written.
   */
  async federatedComplete(ctx: WorkspaceContext, connectionId: string, body: FederatedCompleteDto): Promise<never> {
    const upstream = body.upstream_connection_id;
    const bytes = Buffer.byteLength(upstream, 'utf8');
    if (bytes < 1 || bytes > 256 || upstream !== upstream.trim() || /[\x00-\x1f\x7f]/.test(upstream) || upstream.includes(':') || upstream.includes('//')) {
      throw new ApiError(400, 'invalid upstream connection id');
    }
    const [row]: ConnectionRow[] = await this.dataSource.query(`SELECT ${CONNECTION_COLUMNS} FROM connections WHERE id = $1 AND workspace_id = $2 AND kind = 'tool'`, [connectionId, ctx.id]);
    if (!row) throw new ApiError(404, NOT_FOUND);
    if (row.custody !== 'federated') throw new ApiError(409, 'connection is not federated');
    if (row.status !== 'pending') throw new ApiError(409, 'connection is not pending');
    const versions = await this.publications.versions(ctx.id);
    if (versions.published_version < versions.snapshot_version) throw new ApiError(409, 'connection snapshot is not published');
    const [session]: { allowed_mcp_origins: string[] }[] = await this.dataSource.query(
      `SELECT allowed_mcp_origins FROM catalog_sessions WHERE id = $1 AND workspace_id = $2 AND connection_id = $3 AND user_id = $4 AND provider = $5
         AND consumed_at IS NULL AND expires_at > clock_timestamp()`,
      [body.catalog_session_id, ctx.id, row.id, ctx.operator.userId, row.source],
    );
    if (!session) throw new ApiError(409, SESSION_UNAVAILABLE);
    if (!mcpTargetAllowed(body.mcp_url, session.allowed_mcp_origins)) throw new ApiError(400, 'mcp target is not allowed');
    throw new ApiError(409, 'broker_verification_unavailable');
  }

  // ---------- reads for other modules (this module owns the connections table) ----------

  /** Whether the workspace holds the connection (of one of `kinds`, any kind when omitted), read in `manager`. */
  async holds(manager: EntityManager, workspaceId: string, connectionId: string, kinds?: ConnectionRow['kind'][]): Promise<boolean> {
    const rows: unknown[] = await manager.query(`SELECT 1 FROM connections WHERE id = $1 AND workspace_id = $2 AND ($3::text[] IS NULL OR kind = ANY($3))`, [
      connectionId,
      workspaceId,
      kinds ?? null,
    ]);
    return rows.length > 0;
  }

  /** One tool connection's custody, source, target and auth profile type, share-locked for the rest of `tx`; undefined when absent. */
  async toolShape(tx: Tx, workspaceId: string, connectionId: string): Promise<ToolShape | undefined> {
    const [row]: ToolShape[] = await tx.manager.query(
      `SELECT custody, source, target, auth_profile->>'type' AS profile_type, auth_profile->>'broker_connection_id' AS broker_reference
       FROM connections WHERE id = $1 AND workspace_id = $2 AND kind = 'tool' FOR SHARE`,
      [connectionId, workspaceId],
    );
    return row;
  }

  /** Ids of the workspace's active connections, read in `manager` (a snapshot part's consistent read). */
  async activeIds(manager: EntityManager, workspaceId: string): Promise<string[]> {
    const rows: { id: string }[] = await manager.query(`SELECT id FROM connections WHERE workspace_id = $1 AND status = 'active' ORDER BY id`, [workspaceId]);
    return rows.map((r) => r.id);
  }

  /** Connector slugs the workspace holds a tool connection on that is not disabled. */
  async toolSlugs(workspaceId: string): Promise<Set<string>> {
    const rows: { connector_slug: string }[] = await this.dataSource.query(
      `SELECT DISTINCT connector_slug FROM connections WHERE workspace_id = $1 AND kind = 'tool' AND status <> 'disabled'`,
      [workspaceId],
    );
    return new Set(rows.map((r) => r.connector_slug));
  }

  /** `{connector_slug}@{lane}` of every active tool connection of the workspace. */
  async activeToolLanes(workspaceId: string): Promise<Set<string>> {
    const rows: { lane: string }[] = await this.dataSource.query(
      `SELECT DISTINCT connector_slug || '@' || source AS lane FROM connections WHERE workspace_id = $1 AND kind = 'tool' AND status = 'active'`,
      [workspaceId],
    );
    return new Set(rows.map((r) => r.lane));
  }

  // ---------- helpers shared with the OAuth callback ----------

  /** Locks one connection of the workspace (of the given kinds) for the rest of `tx`; 404 otherwise. */
  async lockRow(tx: Tx, workspaceId: string, connectionId: string, kinds: ConnectionRow['kind'][]): Promise<ConnectionRow> {
    const [row]: ConnectionRow[] = await tx.manager.query(
      `SELECT ${CONNECTION_COLUMNS} FROM connections WHERE id = $1 AND workspace_id = $2 AND kind = ANY($3) FOR UPDATE`,
      [connectionId, workspaceId, kinds],
    );
    if (!row) throw new ApiError(404, NOT_FOUND);
    return row;
  }

  async record(tx: Tx, ws: WorkspaceContext, action: AuditAction, row: ConnectionRow, extra: Record<string, unknown> = {}): Promise<void> {
    await this.audit.record(tx, {
      workspaceId: ws.id,
      actor: ws.operator,
      action,
      target: row.id,
      detail: { connection_id: row.id, source: row.source, tier: tierOf(row), status: row.status, ...extra },
    });
  }

  // ---------- internals ----------

  private nativeProfile(connector: CatalogConnector, clientId: string | undefined): AuthProfile {
    const native = connector.native_profile!;
    if (native.type === 'api_key') return { type: 'api_key', connector_slug: connector.slug };
    return { type: 'oauth2', connector_slug: connector.slug, authorize_url: native.authorize_url, token_url: native.token_url, scope: native.scope, client_id: clientId! };
  }

  /** The workspace's active account at a broker lane; without one the lane is not available. */
  private async brokerOf(tx: Tx, workspaceId: string, lane: BrokerLane): Promise<string> {
    const [provider]: { id: string }[] = await tx.manager.query(
      `SELECT id FROM connections WHERE workspace_id = $1 AND kind = 'catalog_provider' AND connector_slug = $2 AND status = 'active'`,
      [workspaceId, lane],
    );
    if (!provider) throw new ApiError(400, 'catalog source is not available');
    return provider.id;
  }

  private seal(workspaceId: string, connectionId: string, digest: string, revision: number, kind: SecretKind, secret: string) {
    return this.gateway.seal({ workspaceId, connectionId, authProfileDigest: digest, credentialRevision: revision, secretKind: kind, secret });
  }

  /** Seals a key through the gateway and makes the connection active with it. */
  private async storeKey(tx: Tx, ws: WorkspaceContext, row: ConnectionRow, kind: SecretKind, secret: string): Promise<void> {
    const sealed = await this.seal(ws.id, row.id, row.auth_profile_digest, row.credential_revision, kind, secret);
    await tx.manager.query(
      `UPDATE connections SET status = 'active', credential_envelope = $3, key_id = $4, last4 = $5, credential_scheme = 'api_key', refresh_envelope = NULL,
         expires_at = NULL, credential_revision = credential_revision + 1, refresh_failure = NULL, updated_at = clock_timestamp()
       WHERE id = $1 AND workspace_id = $2`,
      [row.id, ws.id, sealed.envelope, sealed.key_id, sealed.last4],
    );
    await this.record(tx, ws, 'connection.credential.store', { ...row, status: 'active' }, { last4: sealed.last4 });
    await this.publications.stage(tx, ws.id, 'connection.credential.store');
  }

  /** The handshake the operator needs next: an OAuth state row, a catalog session, or a key form. */
  private async prepareNext(tx: Tx, ws: WorkspaceContext, row: ConnectionRow): Promise<Prepared> {
    const expiresAt = new Date(Date.now() + HANDSHAKE_TTL_MS);
    const profile = row.auth_profile;
    switch (profile.type) {
      case 'api_key':
        return { kind: 'restricted_key' };
      case 'oauth2': {
        const state = randomBytes(32).toString('base64url');
        const verifier = randomBytes(32).toString('base64url');
        await tx.manager.query(
          `INSERT INTO oauth_states (state_hash, workspace_id, connection_id, user_id, code_verifier, credential_revision, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
          [sha256Hex(state), ws.id, row.id, ws.operator.userId, verifier, row.credential_revision, expiresAt],
        );
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
        await tx.manager.query(
          `INSERT INTO catalog_sessions (id, workspace_id, connection_id, user_id, provider, upstream_id, allowed_mcp_origins, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
          [sessionId, ws.id, row.id, ws.operator.userId, row.source, source.upstream_id, JSON.stringify(source.allowed_mcp_origins), expiresAt],
        );
        const url = new URL(this.catalog.lane(row.source as BrokerLane).connect_url);
        url.searchParams.set('session', sessionId);
        url.searchParams.set('connector', source.upstream_id);
        return { kind: 'catalog_redirect', url: url.toString(), expires_at: formatTimeRequired(expiresAt), catalog_session_id: sessionId };
      }
      case 'broker_api_key':
        return { kind: 'none' };
    }
  }

  redirectUri(): string {
    return `${this.config.publicUrl}/oauth/callback`;
  }

  /** Outstanding OAuth states and unconsumed catalog sessions of a connection are superseded. */
  private async dropHandshakes(tx: Tx, connectionId: string): Promise<void> {
    await tx.manager.query(`DELETE FROM oauth_states WHERE connection_id = $1`, [connectionId]);
    await tx.manager.query(`DELETE FROM catalog_sessions WHERE connection_id = $1 AND consumed_at IS NULL`, [connectionId]);
  }

  /** The mutation envelope after commit: `next` only once the snapshot covering the change has published. */
  private async envelope(ctx: WorkspaceContext, connectionId: string, prepared: Prepared) {
    const versions = await this.publications.versions(ctx.id);
    const connection = await this.projection(ctx, connectionId, versions);
    return toMutationEnvelope(connection, versions.published_version >= versions.snapshot_version ? prepared : { kind: 'none' });
  }

  private async projection(ctx: WorkspaceContext, connectionId: string, versions?: Versions): Promise<ConnectionDocument> {
    const rows: ConnectionRow[] = await this.dataSource.query(`SELECT ${CONNECTION_COLUMNS} FROM connections WHERE id = $1 AND workspace_id = $2`, [connectionId, ctx.id]);
    const [doc] = await this.project(this.dataSource.manager, ctx, rows, versions ?? (await this.publications.versions(ctx.id)));
    return doc;
  }

  /**
   * Projections of `rows` for the caller. `pending_catalog_session` shows only to a caller holding
   * `connection.manage`, only the caller's own unconsumed, unexpired session whose provider still
   * matches the connection's broker lane, and only while the snapshot is published.
   */
  private async project(manager: EntityManager, ws: WorkspaceContext, rows: ConnectionRow[], versions: Versions): Promise<ConnectionDocument[]> {
    const sessions = new Map<string, PendingCatalogSession>();
    const pending = rows.filter((r) => r.status === 'pending' && r.custody === 'federated').map((r) => r.id);
    if (pending.length > 0 && roleGrants(ws.role, 'connection.manage') && versions.published_version >= versions.snapshot_version) {
      const found: { id: string; connection_id: string; expires_at: Date }[] = await manager.query(
        `SELECT s.id, s.connection_id, s.expires_at FROM catalog_sessions s JOIN connections c ON c.id = s.connection_id AND c.workspace_id = s.workspace_id
         WHERE s.workspace_id = $1 AND s.connection_id = ANY($2) AND s.user_id = $3 AND s.consumed_at IS NULL AND s.expires_at > clock_timestamp()
           AND s.provider = c.source ORDER BY s.created_at`,
        [ws.id, pending, ws.operator.userId],
      );
      for (const s of found) sessions.set(s.connection_id, { catalog_session_id: s.id, expires_at: formatTimeRequired(s.expires_at) });
    }
    return rows.map((row) => toConnectionDocument(row, this.displayName(row), versions, sessions.get(row.id) ?? null));
  }

  private displayName(row: ConnectionRow): string {
    if (row.kind === 'catalog_provider') return this.catalog.lane(row.connector_slug as BrokerLane).display_name;
    return this.catalog.connector(row.connector_slug)?.display_name ?? row.connector_slug;
  }
}

function versionsOf(ws: WorkspaceContext): Versions {
  return { snapshot_version: ws.snapshotVersion, published_version: ws.publishedVersion };
}

/** Keys beginning `sk_live_` are refused wherever a credential is sealed. */
export function refuseLiveKey(secret: string | undefined): void {
  if (secret !== undefined && secret.startsWith('sk_live_')) throw new ApiError(400, LIVE_KEY_REFUSED);
}

/** An https URL without credentials whose origin is one of the reviewed origins frozen on the session. */
export function mcpTargetAllowed(value: string, origins: string[]): boolean {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  return url.protocol === 'https:' && !url.username && !url.password && origins.includes(url.origin);
}
