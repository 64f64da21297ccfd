import { Injectable, OnModuleInit } from '@nestjs/common';
import { EntityManager } from 'typeorm';
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
import { Transactions } from 'src/database/transactions';
import { WebhookSubscriptionsRepository } from 'src/modules/webhooks/webhook-subscriptions.repository';
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
    private readonly transactions: Transactions,
    private readonly subscriptions: WebhookSubscriptionsRepository,
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
      const rows = await this.subscriptions.ofConnections(manager, ws.id, active);
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
      const key = { workspaceId: ws.id, connectionId, id: subscriptionId };
      const values = { signatureProfile: config.signature_profile, toleranceSeconds: config.tolerance_seconds, notificationUrl: config.notification_url, signingKeys: keys };
      const existing = await this.subscriptions.lockRevision(tx.manager, key);
      if (existing) await this.subscriptions.update(tx.manager, key, values, existing.revision + 1);
      else await this.subscriptions.insert(tx.manager, key, values);
      const stored = (await this.subscriptions.find(tx.manager, key))!;
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
    // The connection check and the read in one (read-only) transaction: the connection check reads in a manager.
    const rows = await this.transactions.run(async (tx) => {
      await this.connection(tx.manager, ws.id, connectionId);
      return this.subscriptions.list(tx.manager, ws.id, connectionId);
    });
    const versions = await this.publications.versions(ws.id);
    return { subscriptions: rows.map((row) => toSubscriptionDocument(row, versions)) };
  }

  async get(ws: WorkspaceContext, connectionId: string, subscriptionId: string) {
    const row = await this.transactions.run(async (tx) => {
      await this.connection(tx.manager, ws.id, connectionId);
      return this.subscriptions.find(tx.manager, { workspaceId: ws.id, connectionId, id: subscriptionId });
    });
    if (!row) throw new ApiError(404, 'webhook subscription not found');
    return toSubscriptionDocument(row, await this.publications.versions(ws.id));
  }

  async delete(ctx: WorkspaceContext, connectionId: string, subscriptionId: string): Promise<void> {
    await this.access.mutate(ctx, async (tx, ws) => {
      await this.connection(tx.manager, ws.id, connectionId);
      if (!(await this.subscriptions.delete(tx.manager, { workspaceId: ws.id, connectionId, id: subscriptionId }))) throw new ApiError(404, 'webhook subscription not found');
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
