import { NotificationsModule } from 'src/modules/notifications/notifications.module';
import { Module, OnModuleInit } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { AuditModule } from 'src/modules/audit/audit.module';
import { CatalogModule } from 'src/modules/catalog/catalog.module';
import { CatalogService } from 'src/modules/catalog/catalog.service';
import { CatalogController } from 'src/modules/connections/catalog.controller';
import { ConnectionsController, OAuthController } from 'src/modules/connections/connections.controller';
import { ConnectionsService } from 'src/modules/connections/connections.service';
import { AuthProfile, tierOf } from 'src/modules/connections/dto/connection.document';
import { ExpiredGrantsJob } from 'src/modules/connections/expired-grants.job';
import { ModelConnectionsService } from 'src/modules/connections/model-connections.service';
import { OAuthService } from 'src/modules/connections/oauth.service';
import { RefreshJob } from 'src/modules/connections/refresh.job';
import { GatewayModule } from 'src/modules/gateway/gateway.module';
import { PublicationModule } from 'src/modules/publication/publication.module';
import { SnapshotRegistry, SnapshotWorkspace } from 'src/modules/publication/snapshot.registry';
import { OverviewRegistry } from 'src/modules/workspaces/overview.registry';
import { WorkspacesModule } from 'src/modules/workspaces/workspaces.module';
import { TypeOrmModule } from '@nestjs/typeorm';
import { CONNECTIONS_ENTITIES } from 'src/modules/connections/entities';

interface SnapshotRow {
  id: string;
  kind: 'tool' | 'catalog_provider';
  connector_slug: string;
  source: 'native' | 'broker_a' | 'broker_b';
  custody: string;
  target: 'gateway' | 'broker' | 'worker' | 'model_provider';
  auth_profile: AuthProfile;
  credential_envelope: string;
  key_id: string | null;
  credential_scheme: string | null;
  expires_at: Date | null;
  credential_revision: number;
}

@Module({
  imports: [TypeOrmModule.forFeature(CONNECTIONS_ENTITIES), AuditModule, CatalogModule, GatewayModule, NotificationsModule, PublicationModule, WorkspacesModule],
  controllers: [ConnectionsController, OAuthController, CatalogController],
  providers: [ConnectionsService, ModelConnectionsService, OAuthService, RefreshJob, ExpiredGrantsJob],
  exports: [ConnectionsService, ModelConnectionsService],
})
export class ConnectionsModule implements OnModuleInit {
  constructor(
    private readonly snapshots: SnapshotRegistry,
    private readonly overviews: OverviewRegistry,
    private readonly catalog: CatalogService,
    private readonly dataSource: DataSource,
  ) {}

  onModuleInit(): void {
    this.snapshots.register('connections', (manager, ws) => this.snapshotPart(manager, ws));
    this.overviews.register('connectors', (workspaceId) => connectorsBlock(this.dataSource, workspaceId));
  }

  /** Active tool connections and broker accounts with their sealed credential (model rows publish under `models`). */
  private async snapshotPart(manager: EntityManager, ws: SnapshotWorkspace) {
    const rows: SnapshotRow[] = await manager.query(
      `SELECT id, kind, connector_slug, source, custody, target, auth_profile, credential_envelope, key_id, credential_scheme, expires_at, credential_revision
       FROM connections WHERE workspace_id = $1 AND kind <> 'model' AND status = 'active' AND credential_envelope IS NOT NULL ORDER BY id`,
      [ws.id],
    );
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
}

/** Overview `connectors`: the workspace's connections (model providers excluded) and how many are active. */
async function connectorsBlock(dataSource: DataSource, workspaceId: string) {
  const [row]: { total: number; active: number }[] = await dataSource.query(
    `SELECT count(*)::int AS total, count(*) FILTER (WHERE status = 'active')::int AS active FROM connections WHERE workspace_id = $1 AND kind <> 'model'`,
    [workspaceId],
  );
  return { total: row.total, connections_active: row.active };
}
