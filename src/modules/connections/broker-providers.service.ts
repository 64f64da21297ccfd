import { Injectable } from '@nestjs/common';
import { WorkspaceContext } from 'src/platform/access/context';
import { WorkspaceAccess } from 'src/platform/access/workspace-access.service';
import { canonicalJson, sha256Tagged } from 'src/common/crypto/crypto';
import { ApiError } from 'src/common/http/errors';
import { Tx } from 'src/database/transaction';
import { BrokerLane } from 'src/modules/catalog/catalog.schema';
import { ConnectionProjections } from 'src/modules/connections/connection-projections.service';
import { ConnectionSteps } from 'src/modules/connections/connection-steps.service';
import { ConnectionsRepository } from 'src/modules/connections/connections.repository';
import { CredentialSealing, refuseLiveKey } from 'src/modules/connections/credential-sealing.service';
import { AuthProfile } from 'src/modules/connections/dto/connection.document';
import { CatalogProviderDto } from 'src/modules/connections/dto/connection.dto';
import { PublicationService } from 'src/modules/publication/publication.service';

/**
 * The workspace's accounts at the broker lanes (`catalog_provider` connections): federated tool
 * connections run through the active account of their lane.
 */
@Injectable()
export class BrokerProvidersService {
  constructor(
    private readonly connections: ConnectionsRepository,
    private readonly access: WorkspaceAccess,
    private readonly steps: ConnectionSteps,
    private readonly sealing: CredentialSealing,
    private readonly projections: ConnectionProjections,
    private readonly publications: PublicationService,
  ) {}

  /**
   * Registers (or re-keys) the workspace's account at a broker lane. The connection is created
   * pending and published first; only once the published snapshot covers it is the key sealed.
   */
  async register(ctx: WorkspaceContext, body: CatalogProviderDto) {
    refuseLiveKey(body.api_key);
    const id = await this.access.mutate(ctx, async (tx, ws) => {
      const live = await this.connections.lockLive(tx.manager, ws.id, 'catalog_provider', body.provider);
      if (live[0]) return live[0].id;
      const profile: AuthProfile = { type: 'broker_api_key', provider: body.provider };
      const id = await this.connections.insert(tx.manager, {
        workspaceId: ws.id,
        kind: 'catalog_provider',
        connectorSlug: body.provider,
        source: body.provider,
        custody: 'federated',
        target: 'broker',
        authProfile: profile,
        authProfileDigest: sha256Tagged(canonicalJson(profile)),
        createdBy: ws.operator.userId,
      });
      await this.steps.record(tx, ws, 'catalog.provider.register', await this.steps.lockRow(tx, ws.id, id, ['catalog_provider']));
      await this.publications.stage(tx, ws.id, 'catalog.provider.register');
      return id;
    });
    await this.access.mutate(ctx, async (tx, ws) => {
      const row = await this.steps.lockRow(tx, ws.id, id, ['catalog_provider']);
      if (ws.publishedVersion < ws.snapshotVersion || row.status === 'disabled') return;
      await this.sealing.storeKey(tx, ws, row, 'broker_api_key', body.api_key);
    });
    return this.projections.envelope(ctx, id, { kind: 'none' });
  }

  /** The workspace's active account at a broker lane, read in `tx`; without one the lane is not available (400). */
  async accountOf(tx: Tx, workspaceId: string, lane: BrokerLane): Promise<string> {
    const id = await this.connections.activeBrokerId(tx.manager, workspaceId, lane);
    if (!id) throw new ApiError(400, 'catalog source is not available');
    return id;
  }
}
