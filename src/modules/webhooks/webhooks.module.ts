import { Module } from '@nestjs/common';
import { InternalEvidenceController } from 'src/modules/webhooks/internal-evidence.controller';
import { WebhookEvidenceService } from 'src/modules/webhooks/webhook-evidence.service';
import { WebhookSubscriptionsController } from 'src/modules/webhooks/webhook-subscriptions.controller';
import { WebhookSubscriptionsService } from 'src/modules/webhooks/webhook-subscriptions.service';
import { WebhooksJob } from 'src/modules/webhooks/webhooks.job';

/** Webhook subscriptions (published for the gateway's ingress) and signed webhook evidence. */
@Module({
  controllers: [WebhookSubscriptionsController, InternalEvidenceController],
  providers: [WebhookSubscriptionsService, WebhookEvidenceService, WebhooksJob],
})
export class WebhooksModule {}
