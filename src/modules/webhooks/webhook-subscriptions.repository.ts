import { Injectable } from '@nestjs/common';
import { EntityManager, In } from 'typeorm';
import { WebhookSubscription } from 'src/modules/webhooks/entities/webhook-subscription.entity';

/** The key of a subscription: workspace, connection and subscription id. */
export interface SubscriptionKey {
  workspaceId: string;
  connectionId: string;
  id: string;
}

/** What a subscription write sets (its key and revision aside). */
export type SubscriptionValues = Pick<WebhookSubscription, 'signatureProfile' | 'toleranceSeconds' | 'notificationUrl' | 'signingKeys'>;

/** `webhook_subscriptions`: the gateway's ingress configuration per connection. */
@Injectable()
export class WebhookSubscriptionsRepository {
  /** The subscriptions of the given connections (the snapshot's: the active ones), by connection then id. */
  ofConnections(manager: EntityManager, workspaceId: string, connectionIds: string[]): Promise<WebhookSubscription[]> {
    return manager.find(WebhookSubscription, { where: { workspaceId, connectionId: In(connectionIds) }, order: { connectionId: 'ASC', id: 'ASC' } });
  }

  /** A connection's subscriptions by id. */
  list(manager: EntityManager, workspaceId: string, connectionId: string): Promise<WebhookSubscription[]> {
    return manager.find(WebhookSubscription, { where: { workspaceId, connectionId }, order: { id: 'ASC' } });
  }

  find(manager: EntityManager, key: SubscriptionKey): Promise<WebhookSubscription | null> {
    return manager.findOneBy(WebhookSubscription, { ...key });
  }

  /** The subscription's revision, its row locked `FOR UPDATE`; null when there is none. */
  lockRevision(manager: EntityManager, key: SubscriptionKey): Promise<Pick<WebhookSubscription, 'revision'> | null> {
    return manager.findOne(WebhookSubscription, { select: { revision: true }, where: { ...key }, lock: { mode: 'pessimistic_write' } });
  }

  async insert(manager: EntityManager, key: SubscriptionKey, values: SubscriptionValues): Promise<void> {
    await manager.insert(WebhookSubscription, { ...key, ...values, revision: 1 });
  }

  /** Replaces the values at `revision`, `updated_at` on the database clock. */
  async update(manager: EntityManager, key: SubscriptionKey, values: SubscriptionValues, revision: number): Promise<void> {
    await manager.update(WebhookSubscription, { ...key }, { ...values, revision, updatedAt: () => 'clock_timestamp()' });
  }

  /** Deletes the subscription; false when there was none. */
  async delete(manager: EntityManager, key: SubscriptionKey): Promise<boolean> {
    const { affected } = await manager.delete(WebhookSubscription, { ...key });
    return !!affected;
  }
}
