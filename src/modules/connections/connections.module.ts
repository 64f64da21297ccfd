import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditModule } from 'src/modules/audit/audit.module';
import { CatalogModule } from 'src/modules/catalog/catalog.module';
import { BrokerProvidersService } from 'src/modules/connections/broker-providers.service';
import { CatalogController } from 'src/modules/connections/catalog.controller';
import { ConnectionProjections } from 'src/modules/connections/connection-projections.service';
import { ConnectionSteps } from 'src/modules/connections/connection-steps.service';
import { ConnectionsController, OAuthController } from 'src/modules/connections/connections.controller';
import { ConnectionsRepository } from 'src/modules/connections/connections.repository';
import { ConnectionsService } from 'src/modules/connections/connections.service';
import { ConnectionsSnapshotSection } from 'src/modules/connections/connections-snapshot.section';
import { CredentialRefreshRepository } from 'src/modules/connections/credential-refresh.repository';
import { CredentialSealing } from 'src/modules/connections/credential-sealing.service';
import { CONNECTIONS_ENTITIES } from 'src/modules/connections/entities';
import { ExpiredGrantsJob } from 'src/modules/connections/expired-grants.job';
import { HandshakesRepository } from 'src/modules/connections/handshakes.repository';
import { HandshakesService } from 'src/modules/connections/handshakes.service';
import { ModelConnectionsRepository } from 'src/modules/connections/model-connections.repository';
import { ModelConnectionsService } from 'src/modules/connections/model-connections.service';
import { OAuthService } from 'src/modules/connections/oauth.service';
import { RefreshJob } from 'src/modules/connections/refresh.job';
import { ToolConnectionsService } from 'src/modules/connections/tool-connections.service';
import { GatewayModule } from 'src/modules/gateway/gateway.module';
import { NotificationsModule } from 'src/modules/notifications/notifications.module';
import { PublicationModule } from 'src/modules/publication/publication.module';
import { WorkspacesModule } from 'src/modules/workspaces/workspaces.module';

/**
 * Tool connections, broker registrations and the model rows of `connections`, the OAuth and
 * catalog handshakes, credential refresh. Other modules call `ConnectionsService` (tool reads) and
 * `ModelConnectionsService` (model rows).
 */
@Module({
  imports: [
    TypeOrmModule.forFeature(CONNECTIONS_ENTITIES),
    AuditModule,
    CatalogModule,
    GatewayModule,
    NotificationsModule,
    PublicationModule,
    WorkspacesModule,
  ],
  controllers: [ConnectionsController, OAuthController, CatalogController],
  providers: [
    ConnectionsRepository,
    HandshakesRepository,
    ModelConnectionsRepository,
    CredentialRefreshRepository,
    ConnectionSteps,
    CredentialSealing,
    HandshakesService,
    ConnectionProjections,
    BrokerProvidersService,
    ToolConnectionsService,
    ConnectionsService,
    ModelConnectionsService,
    OAuthService,
    ConnectionsSnapshotSection,
    RefreshJob,
    ExpiredGrantsJob,
  ],
  exports: [ConnectionsService, ModelConnectionsService],
})
export class ConnectionsModule {}
