import { Injectable, OnModuleInit } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { CatalogService } from 'src/modules/catalog/catalog.service';
import { ConnectionsRepository } from 'src/modules/connections/connections.repository';
import { tierOf } from 'src/modules/connections/dto/connection.document';
import { SnapshotRegistry, SnapshotWorkspace } from 'src/modules/publication/snapshot.registry';
import { OverviewRegistry } from 'src/modules/workspaces/overview.registry';

/**
 * What this module contributes to the workspace's read models: the snapshot's `connections` part
 * (active tool connections and broker accounts with their sealed credential; model rows publish
 * under `models`) and the overview's `connectors` block.
 */
@Injectable()
export class ConnectionsSnapshotSection implements OnModuleInit {
  constructor(
    private readonly connections: ConnectionsRepository,
    private readonly catalog: CatalogService,
    private readonly snapshots: SnapshotRegistry,
    private readonly overviews: OverviewRegistry,
  ) {}

  onModuleInit(): void {
    this.snapshots.register('connections', (manager, ws) => this.part(manager, ws));
    this.overviews.register('connectors', (workspaceId) => this.block(workspaceId));
  }

  async part(manager: EntityManager, ws: SnapshotWorkspace) {
    const rows = await this.connections.published(manager, ws.id);
    return rows.map((row) => {
      const source = row.kind === 'tool' ? this.catalog.source(row.connector_slug, row.source) : undefined;
      return {
        connection_id: row.id,
        kind: row.kind,
        connector_slug: row.connector_slug,
        source: row.source,
        tier: tierOf(row),
        custody: row.custody,
        auth_type: row.auth_profile.type,
        upstream_id: source?.upstream_id ?? null,
        allowed_mcp_origins: source?.allowed_mcp_origins ?? [],
        broker_connection_id: row.auth_profile.type === 'federated' ? row.auth_profile.broker_connection_id : null,
        credential_revision: row.credential_revision,
        credential: { envelope: row.credential_envelope, key_id: row.key_id, scheme: row.credential_scheme, expires_at: row.expires_at?.toISOString() ?? null },
      };
    });
  }

  /** Overview `connectors`: the workspace's connections (model providers excluded) and how many are active. */
  async block(workspaceId: string) {
    const { total, active } = await this.connections.counts(workspaceId);
    return { total, connections_active: active };
  }
}
