import { WebhookEvidence } from 'src/modules/webhooks/entities/webhook-evidence.entity';
import { WebhookSubscription } from 'src/modules/webhooks/entities/webhook-subscription.entity';

/** The tables webhooks owns: its repositories may name these and no others (test/platform/ownership.spec.ts). */
export const WEBHOOKS_ENTITIES = [WebhookEvidence, WebhookSubscription];
