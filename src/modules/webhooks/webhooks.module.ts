import { Module } from '@nestjs/common';
import { AuditModule } from 'src/modules/audit/audit.module';
import { ConnectionsModule } from 'src/modules/connections/connections.module';
import { GatewayModule } from 'src/modules/gateway/gateway.module';
import { PublicationModule } from 'src/modules/publication/publication.module';
import { WorkspacesModule } from 'src/modules/workspaces/workspaces.module';
import { InternalEvidenceController } from 'src/modules/webhooks/internal-evidence.controller';
import { WebhookEvidenceService } from 'src/modules/webhooks/webhook-evidence.service';
import { WebhookSubscriptionsController } from 'src/modules/webhooks/webhook-subscriptions.controller';
import { WebhookSubscriptionsService } from 'src/modules/webhooks/webhook-subscriptions.service';
import { WebhooksJob } from 'src/modules/webhooks/webhooks.job';
import { WebhookEvidenceRepository } from 'src/modules/webhooks/webhook-evidence.repository';
import { WebhookSubscriptionsRepository } from 'src/modules/webhooks/webhook-subscriptions.repository';
import { ReceiptsModule } from 'src/modules/receipts/receipts.module';
import { TypeOrmModule } from '@nestjs/typeorm';
import { WEBHOOKS_ENTITIES } from 'src/modules/webhooks/entities';

/** Webhook subscriptions (published for the gateway's ingress) and signed webhook evidence. */
@Module({
  imports: [TypeOrmModule.forFeature(WEBHOOKS_ENTITIES), AuditModule, ConnectionsModule, GatewayModule, PublicationModule, ReceiptsModule, WorkspacesModule],
  controllers: [WebhookSubscriptionsController, InternalEvidenceController],
  providers: [WebhookSubscriptionsService, WebhookEvidenceService, WebhooksJob, WebhookEvidenceRepository, WebhookSubscriptionsRepository],
})
export class WebhooksModule {}
