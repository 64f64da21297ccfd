import { Injectable, OnModuleInit } from '@nestjs/common';
import { WorkspaceContext } from 'src/platform/access/context';
import { WorkspaceAccess } from 'src/platform/access/workspace-access.service';
import { canonicalJson, sha256Tagged } from 'src/common/crypto/crypto';
import { badRequest, conflict } from 'src/common/http/errors';
import { isUniqueViolation } from 'src/database/errors';
import { Tx } from 'src/database/transaction';
import { AuditAction } from 'src/modules/audit/audit-vocabulary';
import { AuditService } from 'src/modules/audit/audit.service';
import { refuseLiveKey } from 'src/modules/connections/credential-sealing.service';
import { ModelConfig, ModelConnectionRow, ModelConnectionsService } from 'src/modules/connections/model-connections.service';
import { GatewayClient } from 'src/modules/gateway/gateway.client';
import { publicationOf, toModelConnectionDocument, toSnapshotModel } from 'src/modules/model-providers/dto/model-connection.document';
import { CreateModelProviderDto } from 'src/modules/model-providers/dto/model-provider.dto';
import { modelPatternProblem, upstreamModelProblem } from 'src/modules/model-providers/model-names';
import { normalizeBaseUrl, PROVIDERS } from 'src/modules/model-providers/providers';
import { PublicationService, PublicationVersions } from 'src/modules/publication/publication.service';
import { SnapshotRegistry } from 'src/modules/publication/snapshot.registry';

export const PATTERN_CLAIMED = 'model pattern is already claimed by a connection';
export const BASE_URL_INVALID = 'base_url must be an https URL without userinfo, query or fragment whose path ends in /v1';

/**
 * Bring-your-own-key model providers: a connection maps a client model-name pattern to an
 * upstream model behind a provider. Rows of `connections` with `kind = 'model'`, which the
 * connections module owns and this one reads and writes through `ModelConnectionsService`. The key is
 * sealed by the gateway only once the pending connection is published, and only its envelope and
 * `last4` are stored; the snapshot's `models` lists the active, credentialed ones.
 */
@Injectable()
export class ModelProvidersService implements OnModuleInit {
  constructor(
    private readonly connections: ModelConnectionsService,
    private readonly access: WorkspaceAccess,
    private readonly audit: AuditService,
    private readonly publications: PublicationService,
    private readonly snapshots: SnapshotRegistry,
    private readonly gateway: GatewayClient,
  ) {}

  onModuleInit(): void {
    this.snapshots.register('models', async (manager, ws) => (await this.connections.published(manager, ws.id)).map(toSnapshotModel));
  }

  async list(ws: WorkspaceContext) {
    const [rows, versions] = await Promise.all([
      this.connections.list(ws.id),
      this.publications.versions(ws.id),
    ]);
    const publication = publicationOf(versions);
    return { connections: rows.map((row) => toModelConnectionDocument(row, publication)) };
  }

  /**
   * The create order: validate; insert `pending` without a credential under the workspace lock
   * (409 when a non-disabled connection claims the pattern) and republish; only when the published
   * version covers the workspace's current version, seal the key through the gateway; then store
   * the envelope, make the connection `active` and republish. Unsettled publication: the pending
   * projection is returned and the key is never sent.
   */
  async create(ctx: WorkspaceContext, body: CreateModelProviderDto) {
    const provider = PROVIDERS[body.provider];
    const patternProblem = modelPatternProblem(body.model_pattern);
    if (patternProblem) throw badRequest(`model_pattern ${patternProblem}`);
    const upstreamProblem = upstreamModelProblem(body.upstream_model);
    if (upstreamProblem) throw badRequest(`upstream_model ${upstreamProblem}`);
    let baseUrl = provider.base_url;
    if (baseUrl === null) {
      if (body.base_url === undefined) throw badRequest('base_url is required for compat_custom');
      baseUrl = normalizeBaseUrl(body.base_url);
      if (baseUrl === null) throw badRequest(BASE_URL_INVALID);
    } else if (body.base_url !== undefined) {
      throw badRequest('base_url is only accepted for compat_custom');
    }
    refuseLiveKey(body.api_key);
    const config: ModelConfig = { model_pattern: body.model_pattern, upstream_model: body.upstream_model, base_url: baseUrl };
    const profile = { type: 'model_api_key', provider: body.provider, provider_kind: provider.provider_kind, auth_scheme: provider.auth_scheme };

    let pending: ModelConnectionRow;
    try {
      pending = await this.access.mutate(ctx, async (tx, ws) => {
        if (await this.connections.patternClaimed(tx, ws.id, config.model_pattern)) throw conflict(PATTERN_CLAIMED);
        const row = await this.connections.insertPending(tx, ws.id, {
          provider: body.provider,
          profile,
          profileDigest: sha256Tagged(canonicalJson(profile)),
          config,
          createdBy: ws.operator.userId,
        });
        await this.record(tx, ws, 'model_connection.start', row);
        await this.publications.stage(tx, ws.id, 'model_connection.start');
        return row;
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw conflict(PATTERN_CLAIMED);
      throw error;
    }

    const published = await this.publications.versions(ctx.id);
    if (published.published_version < published.snapshot_version) return this.envelope(pending, published);

    const sealed = await this.gateway.seal({
      workspaceId: ctx.id,
      connectionId: pending.id,
      authProfileDigest: pending.auth_profile_digest,
      credentialRevision: pending.credential_revision,
      secretKind: 'model_api_key',
      secret: body.api_key,
    });
    const stored = await this.access.mutate(ctx, async (tx, ws) => {
      const row = await this.connections.lock(tx, ws.id, pending.id);
      // Disabled (or otherwise moved on) while the key was being sealed: nothing is stored.
      if (row.status !== 'pending' || row.credential_revision !== pending.credential_revision) return row;
      const active = await this.connections.activate(tx, ws.id, row.id, { ...sealed, scheme: provider.auth_scheme });
      await this.record(tx, ws, 'model_connection.credential.store', active);
      await this.publications.stage(tx, ws.id, 'model_connection.credential.store');
      return active;
    });
    return this.envelope(stored, await this.publications.versions(ctx.id));
  }

  /** Idempotent: an already disabled connection is answered as it is (no audit, no republish). */
  async disable(ctx: WorkspaceContext, connectionId: string) {
    const row = await this.access.mutate(ctx, async (tx, ws) => {
      const current = await this.connections.lock(tx, ws.id, connectionId);
      if (current.status === 'disabled') return current;
      const disabled = await this.connections.disable(tx, ws.id, connectionId);
      await this.record(tx, ws, 'model_connection.disable', disabled);
      await this.publications.stage(tx, ws.id, 'model_connection.disable');
      return disabled;
    });
    return toModelConnectionDocument(row, publicationOf(await this.publications.versions(ctx.id)));
  }

  private envelope(row: ModelConnectionRow, versions: PublicationVersions) {
    return { schema_version: 1, connection: toModelConnectionDocument(row, publicationOf(versions)) };
  }

  /** Audit detail: provider, pattern, status and `last4`; never the key. */
  private record(tx: Tx, ws: WorkspaceContext, action: AuditAction, row: ModelConnectionRow) {
    return this.audit.record(tx, {
      workspaceId: ws.id,
      actor: ws.operator,
      action,
      target: row.id,
      detail: { connection_id: row.id, provider_id: row.connector_slug, model_pattern: row.model_config.model_pattern, status: row.status, last4: row.last4 },
    });
  }
}
