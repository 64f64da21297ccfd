import { Injectable, OnModuleInit } from '@nestjs/common';
import { DataSource, EntityManager, In } from 'typeorm';
import { WorkspaceContext } from 'src/platform/access/context';
import { WorkspaceAccess } from 'src/platform/access/workspace-access.service';
import { ApiError, FieldValidationError } from 'src/common/http/errors';
import { formatTimeRequired } from 'src/common/time/time';
import { AuditService } from 'src/modules/audit/audit.service';
import { ConnectionsService, ToolShape } from 'src/modules/connections/connections.service';
import { NATIVE_CUSTODY } from 'src/modules/connections/dto/connection.document';
import { PublicationService } from 'src/modules/publication/publication.service';
import { SnapshotRegistry } from 'src/modules/publication/snapshot.registry';
import { SUBSCRIPTION_ID } from 'src/modules/webhooks/dto/evidence.dto';
import { parseSubscriptionConfig } from 'src/modules/webhooks/dto/subscription.schema';
import { toSnapshotSubscription, toSubscriptionDocument } from 'src/modules/webhooks/dto/subscription.document';
import { WebhookSubscription } from 'src/modules/webhooks/entities/webhook-subscription.entity';
import { SignatureProfile, signatureProfile } from 'src/modules/webhooks/signatures/signature-profiles';

/** Largest subscription configuration body (spec section 8). */
export const MAX_CONFIGURATION_BYTES = 128 * 1024;

/**
 * Broker profiles need a federated connection on their lane holding a broker reference; every
 * other profile a native connection (gateway target) in native custody.
 */
export function profileFits(profile: SignatureProfile, c: ToolShape): boolean {
  if (c.source !== profile.lane) return false;
  if (profile.custody === 'federated') return c.custody === 'federated' && c.profile_type === 'federated' && !!c.broker_reference;
  return c.custody === NATIVE_CUSTODY && c.target === 'gateway';
}

/**
 * Webhook subscriptions: the gateway's ingress configuration per connection, provisioned by
 * operators with a sealed signing-key contract (control never sees signing material) and
 * published in the workspace snapshot.
 */
@Injectable()
export class WebhookSubscriptionsService implements OnModuleInit {
  constructor(
    private readonly dataSource: DataSource,
    private readonly access: WorkspaceAccess,
    private readonly audit: AuditService,
    private readonly publications: PublicationService,
    private readonly snapshots: SnapshotRegistry,
    private readonly connections: ConnectionsService,
  ) {}

  onModuleInit(): void {
    // Subscriptions of active connections, which are the ones the snapshot carries.
    this.snapshots.register('webhook_subscriptions', async (manager, ws) => {
      const active = await this.connections.activeIds(manager, ws.id);
      const rows = await manager.find(WebhookSubscription, { where: { workspaceId: ws.id, connectionId: In(active) }, order: { connectionId: 'ASC', id: 'ASC' } });
      return rows.map(toSnapshotSubscription);
    });
  }

  /** Creates or replaces the subscription; `created` tells which. */
  async put(ctx: WorkspaceContext, connectionId: string, subscriptionId: string, body: unknown, contentLength: string | undefined) {
    checkSubscriptionId(subscriptionId);
    if (Number(contentLength) > MAX_CONFIGURATION_BYTES || Buffer.byteLength(JSON.stringify(body ?? null)) > MAX_CONFIGURATION_BYTES) {
      throw new ApiError(413, 'request body too large');
    }
    const config = parseSubscriptionConfig(body, { workspaceId: ctx.id, connectionId, subscriptionId }, new Date());
    const profile = signatureProfile(config.signature_profile)!;
    const keys = config.signing_keys.map((k) => ({ ...k, valid_from: formatTimeRequired(k.valid_from), valid_until: formatTimeRequired(k.valid_until) }));

    const { row, created } = await this.access.mutate(ctx, async (tx, ws) => {
      const connection = await this.connections.toolShape(tx, ws.id, connectionId);
      if (!connection) throw new ApiError(404, 'connection not found');
      if (!profileFits(profile, connection)) throw new ApiError(409, 'signature profile does not fit the connection');
      // Under the workspace lock no other writer can create the same subscription between the find and the insert.
      const subscriptions = tx.manager.getRepository(WebhookSubscription);
      const key = { workspaceId: ws.id, connectionId, id: subscriptionId };
      const values = { signatureProfile: config.signature_profile, toleranceSeconds: config.tolerance_seconds, notificationUrl: config.notification_url, signingKeys: keys };
      const existing = await subscriptions.findOne({ select: { revision: true }, where: key, lock: { mode: 'pessimistic_write' } });
      if (existing) await subscriptions.update(key, { ...values, revision: existing.revision + 1, updatedAt: () => 'clock_timestamp()' });
      else await subscriptions.insert({ ...key, ...values, revision: 1 });
      const stored = await subscriptions.findOneByOrFail(key);
      const version = await this.publications.stage(tx, ws.id, 'webhook.configure');
      await this.audit.record(tx, {
        workspaceId: ws.id,
        actor: ws.operator,
        action: 'webhook.configure',
        target: subscriptionId,
        detail: { connection_id: connectionId, status: existing ? 'replaced' : 'created', last4: keys[0].last4, snapshot_version: version },
      });
      return { row: stored, created: !existing };
    });
    return { created, subscription: toSubscriptionDocument(row, await this.publications.versions(ctx.id)) };
  }

  async list(ws: WorkspaceContext, connectionId: string) {
    await this.connection(this.dataSource.manager, ws.id, connectionId);
    const rows = await this.dataSource.manager.find(WebhookSubscription, { where: { workspaceId: ws.id, connectionId }, order: { id: 'ASC' } });
    const versions = await this.publications.versions(ws.id);
    return { subscriptions: rows.map((row) => toSubscriptionDocument(row, versions)) };
  }

  async get(ws: WorkspaceContext, connectionId: string, subscriptionId: string) {
    await this.connection(this.dataSource.manager, ws.id, connectionId);
    const row = await this.dataSource.manager.findOneBy(WebhookSubscription, { workspaceId: ws.id, connectionId, id: subscriptionId });
    if (!row) throw new ApiError(404, 'webhook subscription not found');
    return toSubscriptionDocument(row, await this.publications.versions(ws.id));
  }

  async delete(ctx: WorkspaceContext, connectionId: string, subscriptionId: string): Promise<void> {
    await this.access.mutate(ctx, async (tx, ws) => {
      await this.connection(tx.manager, ws.id, connectionId);
      const { affected } = await tx.manager.delete(WebhookSubscription, { workspaceId: ws.id, connectionId, id: subscriptionId });
      if (!affected) throw new ApiError(404, 'webhook subscription not found');
      const version = await this.publications.stage(tx, ws.id, 'webhook.delete');
      await this.audit.record(tx, {
        workspaceId: ws.id,
        actor: ws.operator,
        action: 'webhook.delete',
        target: subscriptionId,
        detail: { connection_id: connectionId, snapshot_version: version },
      });
    });
  }

  private async connection(manager: EntityManager, workspaceId: string, connectionId: string): Promise<void> {
    if (!(await this.connections.holds(manager, workspaceId, connectionId, ['tool']))) throw new ApiError(404, 'connection not found');
  }
}

function checkSubscriptionId(id: string): void {
  if (!SUBSCRIPTION_ID.test(id)) {
    throw new FieldValidationError([{ loc: ['path', 'subscription_id'], msg: 'must be wsub_ followed by 1-64 letters, digits, _ or -', type: 'string_pattern_mismatch' }]);
  }
}
