import { Inject, Injectable } from '@nestjs/common';
import { WorkspaceContext } from 'src/platform/access/context';
import { WorkspaceAccess } from 'src/platform/access/workspace-access.service';
import { canonicalJson, sha256Tagged } from 'src/common/crypto/crypto';
import { ApiError } from 'src/common/http/errors';
import { newId } from 'src/common/ids/ids';
import { APP_CONFIG, AppConfig } from 'src/config/config';
import { BrokerLane, CatalogConnector } from 'src/modules/catalog/catalog.schema';
import { CatalogService } from 'src/modules/catalog/catalog.service';
import { BrokerProvidersService } from 'src/modules/connections/broker-providers.service';
import { ConnectionProjections } from 'src/modules/connections/connection-projections.service';
import { CONNECTION_NOT_FOUND, ConnectionSteps } from 'src/modules/connections/connection-steps.service';
import { ConnectionsRepository } from 'src/modules/connections/connections.repository';
import { CredentialSealing, refuseLiveKey } from 'src/modules/connections/credential-sealing.service';
import { AuthProfile, NATIVE_CUSTODY } from 'src/modules/connections/dto/connection.document';
import { FederatedCompleteDto, ReconnectDto, StartConnectionDto } from 'src/modules/connections/dto/connection.dto';
import { HandshakesRepository } from 'src/modules/connections/handshakes.repository';
import { HandshakesService } from 'src/modules/connections/handshakes.service';
import { PublicationService } from 'src/modules/publication/publication.service';

const SESSION_UNAVAILABLE = 'catalog session is not available';

/**
 * Tool connections: start, restricted key, reconnect, disable, purge, discard and federated
 * complete. Every mutation runs under the workspace lock (re-authorized), locks the connection
 * row, audits in the same transaction and stages a snapshot. Secrets are sealed by the gateway
 * inside the transaction, so a gateway failure rolls back everything (502, nothing half-written).
 */
@Injectable()
export class ToolConnectionsService {
  constructor(
    private readonly connections: ConnectionsRepository,
    private readonly sessions: HandshakesRepository,
    private readonly access: WorkspaceAccess,
    private readonly steps: ConnectionSteps,
    private readonly sealing: CredentialSealing,
    private readonly handshakes: HandshakesService,
    private readonly brokers: BrokerProvidersService,
    private readonly projections: ConnectionProjections,
    private readonly publications: PublicationService,
    private readonly catalog: CatalogService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

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
      const live = await this.connections.lockLive(tx.manager, ws.id, 'tool', connector.slug);
      const custody = native ? NATIVE_CUSTODY : 'federated';
      const shell = live[0];
      if (shell && !(shell.status === 'pending' && shell.custody === custody && shell.credential_envelope === null)) {
        throw new ApiError(409, 'connector already has a live connection');
      }
      const profile: AuthProfile = native
        ? nativeProfile(connector, clientId)
        : {
            type: 'federated',
            provider: source.provider,
            upstream_id: source.upstream_id,
            broker_connection_id: await this.brokers.accountOf(tx, ws.id, source.provider as BrokerLane),
          };
      const id = shell?.id ?? newId('conn');
      const digest = sha256Tagged(canonicalJson(profile));
      const revision = shell?.credential_revision ?? 0;
      const clientSecretEnvelope =
        body.client_secret === undefined ? null : (await this.sealing.seal(ws.id, id, digest, revision, 'oauth_client_secret', body.client_secret)).envelope;
      const target = native ? 'gateway' : 'broker';
      if (shell) {
        const set = { source: source.provider, custody, target, authProfile: profile, authProfileDigest: digest, clientSecretEnvelope };
        await this.connections.retarget(tx.manager, ws.id, id, set);
        await this.handshakes.drop(tx, id);
      } else {
        await this.connections.insert(tx.manager, {
          id,
          workspaceId: ws.id,
          kind: 'tool',
          connectorSlug: connector.slug,
          source: source.provider,
          custody,
          target,
          authProfile: profile,
          authProfileDigest: digest,
          clientSecretEnvelope,
          createdBy: ws.operator.userId,
        });
      }
      const row = await this.steps.lockRow(tx, ws.id, id, ['tool']);
      await this.steps.record(tx, ws, 'connection.start', row);
      const prepared = await this.handshakes.prepareNext(tx, ws, row);
      await this.publications.stage(tx, ws.id, 'connection.start');
      return { id, prepared };
    });
    return this.projections.envelope(ctx, id, prepared);
  }

  async restrictedKey(ctx: WorkspaceContext, connectionId: string, apiKey: string) {
    await this.access.mutate(ctx, async (tx, ws) => {
      const row = await this.steps.lockRow(tx, ws.id, connectionId, ['tool']);
      if (row.auth_profile.type !== 'api_key') throw new ApiError(400, 'connection is not an api_key profile');
      refuseLiveKey(apiKey);
      if (row.status !== 'pending') throw new ApiError(409, 'connection is not pending');
      // The gateway checks seals against the published snapshot: nothing is stored before it publishes.
      if (ws.publishedVersion < ws.snapshotVersion) return;
      await this.sealing.storeKey(tx, ws, row, 'api_key', apiKey);
    });
    return this.projections.projection(ctx, connectionId);
  }

  async reconnect(ctx: WorkspaceContext, connectionId: string, body: ReconnectDto) {
    if (body.client_secret !== undefined && body.api_key !== undefined) throw new ApiError(400, 'provide only one credential');
    const prepared = await this.access.mutate(ctx, async (tx, ws) => {
      let row = await this.steps.lockRow(tx, ws.id, connectionId, ['tool']);
      if (row.status === 'active') throw new ApiError(409, 'connection is not pending');
      const type = row.auth_profile.type;
      if (body.client_secret !== undefined && type !== 'oauth2') throw new ApiError(400, 'connection does not accept an oauth client secret');
      if (body.api_key !== undefined && type !== 'api_key') throw new ApiError(400, 'connection does not accept an api key');
      refuseLiveKey(body.client_secret ?? body.api_key);
      if (row.status === 'disabled' && (await this.connections.liveToolExists(tx.manager, ws.id, row.connector_slug, row.id))) {
        throw new ApiError(409, 'connector already has a live connection');
      }
      if (row.auth_profile.type === 'federated') {
        const profile = { ...row.auth_profile, broker_connection_id: await this.brokers.accountOf(tx, ws.id, row.source as BrokerLane) };
        await this.connections.setProfile(tx.manager, ws.id, row.id, profile, sha256Tagged(canonicalJson(profile)));
      }
      const revision = row.credential_revision + 1;
      const secret =
        body.client_secret === undefined
          ? row.client_secret_envelope
          : (await this.sealing.seal(ws.id, row.id, row.auth_profile_digest, revision, 'oauth_client_secret', body.client_secret)).envelope;
      await this.connections.reopen(tx.manager, ws.id, row.id, revision, secret);
      await this.handshakes.drop(tx, row.id);
      row = await this.steps.lockRow(tx, ws.id, row.id, ['tool']);
      await this.steps.record(tx, ws, 'connection.reconnect', row);
      if (body.api_key !== undefined && ws.publishedVersion >= ws.snapshotVersion) {
        await this.sealing.storeKey(tx, ws, row, 'api_key', body.api_key);
        return { kind: 'none' } as const;
      }
      const prepared = await this.handshakes.prepareNext(tx, ws, row);
      await this.publications.stage(tx, ws.id, 'connection.reconnect');
      return prepared;
    });
    return this.projections.envelope(ctx, connectionId, prepared);
  }

  async disable(ctx: WorkspaceContext, connectionId: string) {
    await this.access.mutate(ctx, async (tx, ws) => {
      const row = await this.steps.lockRow(tx, ws.id, connectionId, ['tool', 'catalog_provider']);
      if (row.status === 'disabled') return;
      await this.connections.disable(tx.manager, ws.id, row.id);
      await this.handshakes.drop(tx, row.id);
      await this.steps.record(tx, ws, 'connection.disable', { ...row, status: 'disabled' });
      await this.publications.stage(tx, ws.id, 'connection.disable');
    });
    return this.projections.projection(ctx, connectionId);
  }

  async purge(ctx: WorkspaceContext, connectionId: string) {
    await this.access.mutate(ctx, async (tx, ws) => {
      const row = await this.steps.lockRow(tx, ws.id, connectionId, ['tool', 'catalog_provider']);
      const traces = [row.client_secret_envelope, row.credential_envelope, row.refresh_envelope, row.key_id, row.credential_scheme, row.last4, row.expires_at];
      const holds = traces.some((v) => v !== null);
      if (!holds && row.status === 'disabled') return;
      await this.connections.purge(tx.manager, ws.id, row.id);
      await this.handshakes.drop(tx, row.id);
      // The cleared last4 moves into the audit detail: the only trace of which credential was destroyed.
      await this.steps.record(tx, ws, 'connection.credential.purge', { ...row, status: 'disabled' }, { last4: row.last4 });
      await this.publications.stage(tx, ws.id, 'connection.credential.purge');
    });
    return this.projections.projection(ctx, connectionId);
  }

  async discard(ctx: WorkspaceContext, connectionId: string): Promise<void> {
    await this.access.mutate(ctx, async (tx, ws) => {
      const row = await this.steps.lockRow(tx, ws.id, connectionId, ['tool', 'catalog_provider']);
      if (row.credential_revision !== 0 || row.credential_envelope !== null || row.refresh_envelope !== null || row.last4 !== null) {
        throw new ApiError(409, 'connection has held a credential and is kept as a record');
      }
      await this.connections.delete(tx.manager, ws.id, row.id);
      await this.steps.record(tx, ws, 'connection.discard', row);
      await this.publications.stage(tx, ws.id, 'connection.discard');
    });
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
    const row = await this.connections.find(ctx.id, connectionId, ['tool']);
    if (!row) throw new ApiError(404, CONNECTION_NOT_FOUND);
    if (row.custody !== 'federated') throw new ApiError(409, 'connection is not federated');
    if (row.status !== 'pending') throw new ApiError(409, 'connection is not pending');
    const versions = await this.publications.versions(ctx.id);
    if (versions.published_version < versions.snapshot_version) throw new ApiError(409, 'connection snapshot is not published');
    const origins = await this.sessions.openSessionOrigins({
      id: body.catalog_session_id,
      workspaceId: ctx.id,
      connectionId: row.id,
      userId: ctx.operator.userId,
      provider: row.source,
    });
    if (!origins) throw new ApiError(409, SESSION_UNAVAILABLE);
    if (!mcpTargetAllowed(body.mcp_url, origins)) throw new ApiError(400, 'mcp target is not allowed');
    throw new ApiError(409, 'broker_verification_unavailable');
  }
}

function nativeProfile(connector: CatalogConnector, clientId: string | undefined): AuthProfile {
  const native = connector.native_profile!;
  if (native.type === 'api_key') return { type: 'api_key', connector_slug: connector.slug };
  const { authorize_url, token_url, scope } = native;
  return { type: 'oauth2', connector_slug: connector.slug, authorize_url, token_url, scope, client_id: clientId! };
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
