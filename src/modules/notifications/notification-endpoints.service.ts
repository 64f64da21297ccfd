import { Inject, Injectable } from '@nestjs/common';
import { WorkspaceContext } from 'src/platform/access/context';
import { WorkspaceAccess } from 'src/platform/access/workspace-access.service';
import { ApiError, bodyError, queryError } from 'src/common/http/errors';
import { newId } from 'src/common/ids/ids';
import { decodeCursor, encodeCursor } from 'src/common/pagination/cursor';
import { withDeadline } from 'src/common/time/deadline';
import { formatTimeRequired, parseRfc3339 } from 'src/common/time/time';
import { APP_CONFIG, AppConfig } from 'src/config/config';
import { AuditService } from 'src/modules/audit/audit.service';
import { AttemptsQuery, CreateEndpointDto, DEFAULT_GRACE_SECONDS, RotateSecretDto, UpdateEndpointDto } from 'src/modules/notifications/dto/endpoint.dto';
import { toAttemptDocument, toEndpointDocument } from 'src/modules/notifications/dto/notification.document';
import { NotificationEndpoint } from 'src/modules/notifications/entities/notification-endpoint.entity';
import { isEventPattern } from 'src/modules/notifications/events';
import { NotificationEndpointsRepository } from 'src/modules/notifications/notification-endpoints.repository';
import { NotificationMessagesRepository } from 'src/modules/notifications/notification-messages.repository';
import { DeliveryWaker } from 'src/modules/notifications/delivery-waker';
import { OutboxService } from 'src/modules/notifications/outbox.service';
import { newSecret } from 'src/modules/notifications/signature';
import { addressesOf, hostOf, isRefusedAddress, PRIVATE_TARGET } from 'src/modules/notifications/targets';

export const ENDPOINT_NOT_FOUND = 'notification endpoint not found';
export const MAX_ENDPOINTS = 20;
const ATTEMPT_CURSOR = { at: 'timestamp', id: 'string' } as const;
/** How long create and update wait for the resolver before accepting the name (every attempt checks again). */
const RESOLVE_TIMEOUT_MS = 2000;
const DAY_MS = 86_400_000;

/** Notification endpoints: CRUD, secret rotation, the test ping, recovery and the attempt log. */
@Injectable()
export class NotificationEndpointsService {
  constructor(
    private readonly access: WorkspaceAccess,
    private readonly audit: AuditService,
    private readonly endpoints: NotificationEndpointsRepository,
    private readonly messages: NotificationMessagesRepository,
    private readonly outbox: OutboxService,
    private readonly waker: DeliveryWaker,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async create(ctx: WorkspaceContext, body: CreateEndpointDto) {
    this.checkEventTypes(body.event_types);
    await this.checkUrl(body.url);
    const secret = newSecret();
    const row = await this.access.mutate(ctx, async (tx, ws) => {
      if ((await this.endpoints.count(tx.manager, ws.id)) >= MAX_ENDPOINTS) throw new ApiError(409, 'notification endpoint limit reached');
      const enabled = body.enabled ?? true;
      const created = await this.endpoints.insert(tx.manager, {
        id: newId('nep'),
        workspaceId: ws.id,
        url: body.url,
        eventTypes: body.event_types,
        format: body.format ?? 'standard',
        description: body.description ?? null,
        enabled,
        disabledReason: enabled ? null : 'operator',
        revision: 1,
        secret,
        previousSecret: null,
        previousSecretUntil: null,
        secretRotatedAt: null,
        failingSince: null,
      });
      await this.audit.record(tx, { workspaceId: ws.id, actor: ws.operator, action: 'notification_endpoint.create', target: created.id, detail: { status: enabled ? 'enabled' : 'disabled' } });
      return created;
    });
    return { ...toEndpointDocument(row), secret };
  }

  async list(ws: WorkspaceContext) {
    return { endpoints: (await this.endpoints.list(ws.id)).map(toEndpointDocument) };
  }

  async get(ws: WorkspaceContext, id: string) {
    return toEndpointDocument(await this.found(ws.id, id));
  }

  async update(ctx: WorkspaceContext, id: string, body: UpdateEndpointDto) {
    if (body.event_types !== undefined) this.checkEventTypes(body.event_types);
    if (body.url !== undefined) await this.checkUrl(body.url);
    const row = await this.access.mutate(ctx, async (tx, ws) => {
      const current = await this.endpoints.find(ws.id, id, tx.manager, true);
      if (!current) throw new ApiError(404, ENDPOINT_NOT_FOUND);
      if (current.revision !== body.expected_revision) throw new ApiError(409, 'notification endpoint revision changed');
      const values: Partial<NotificationEndpoint> = { revision: current.revision + 1 };
      if (body.url !== undefined) values.url = body.url;
      if (body.event_types !== undefined) values.eventTypes = body.event_types;
      if (body.format !== undefined) values.format = body.format;
      if (body.description !== undefined) values.description = body.description;
      if (body.enabled !== undefined && body.enabled !== current.enabled) {
        values.enabled = body.enabled;
        values.disabledReason = body.enabled ? null : 'operator';
        values.failingSince = null;
      }
      const updated = await this.endpoints.update(tx.manager, ws.id, id, values);
      await this.audit.record(tx, { workspaceId: ws.id, actor: ws.operator, action: 'notification_endpoint.update', target: id, detail: { status: updated.enabled ? 'enabled' : 'disabled' } });
      return updated;
    });
    return toEndpointDocument(row);
  }

  /** Deleting the endpoint drops its pending deliveries (and its attempt log) with it. */
  async delete(ctx: WorkspaceContext, id: string): Promise<void> {
    await this.access.mutate(ctx, async (tx, ws) => {
      if (!(await this.endpoints.delete(tx.manager, ws.id, id))) throw new ApiError(404, ENDPOINT_NOT_FOUND);
      await this.audit.record(tx, { workspaceId: ws.id, actor: ws.operator, action: 'notification_endpoint.delete', target: id });
    });
  }

  /** A new secret; the replaced one still signs (beside it) for `grace_seconds`. */
  async rotateSecret(ctx: WorkspaceContext, id: string, body: RotateSecretDto) {
    const secret = newSecret();
    const grace = body.grace_seconds ?? DEFAULT_GRACE_SECONDS;
    const row = await this.access.mutate(ctx, async (tx, ws) => {
      const current = await this.endpoints.find(ws.id, id, tx.manager, true);
      if (!current) throw new ApiError(404, ENDPOINT_NOT_FOUND);
      const now = new Date();
      const updated = await this.endpoints.update(tx.manager, ws.id, id, {
        secret,
        previousSecret: grace > 0 ? current.secret : null,
        previousSecretUntil: grace > 0 ? new Date(now.getTime() + grace * 1000) : null,
        secretRotatedAt: now,
      });
      await this.audit.record(tx, { workspaceId: ws.id, actor: ws.operator, action: 'notification_endpoint.rotate_secret', target: id });
      return updated;
    });
    return { ...toEndpointDocument(row), secret };
  }

  /** A `notification.test` message to this endpoint only. */
  async test(ctx: WorkspaceContext, id: string) {
    const messageId = await this.access.mutate(ctx, async (tx, ws) => {
      if (!(await this.endpoints.find(ws.id, id, tx.manager))) throw new ApiError(404, ENDPOINT_NOT_FOUND);
      return this.outbox.emit(tx, ws.id, 'notification.test', { endpoint_id: id }, { endpointId: id });
    });
    return { message_id: messageId! };
  }

  /** Every message since `since` whose delivery to this endpoint failed is delivered again. */
  async recover(ctx: WorkspaceContext, id: string, sinceText: string) {
    const since = parseRfc3339(sinceText);
    if (!since) throw bodyError(['since'], 'since must be an RFC 3339 timestamp');
    if (since.getTime() < Date.now() - this.config.notify.retentionDays * DAY_MS) throw bodyError(['since'], `since must be within ${this.config.notify.retentionDays} days`);
    const requeued = await this.access.mutate(ctx, async (tx, ws) => {
      if (!(await this.endpoints.find(ws.id, id, tx.manager))) throw new ApiError(404, ENDPOINT_NOT_FOUND);
      return this.messages.requeueFailed(tx.manager, ws.id, id, since, new Date());
    });
    if (requeued > 0) this.waker.wake();
    return { requeued };
  }

  async attempts(ws: WorkspaceContext, id: string, q: AttemptsQuery) {
    await this.found(ws.id, id);
    const scope = `notification-attempts:${ws.id}:${id}`;
    let after: { at: Date; id: string } | undefined;
    if (q.cursor !== undefined) {
      const value = decodeCursor(ATTEMPT_CURSOR, scope, q.cursor);
      if (!value) throw queryError('cursor', 'invalid cursor');
      after = { at: new Date(value.at), id: value.id };
    }
    const rows = await this.messages.attempts(ws.id, id, { status: q.status, after, limit: q.limit + 1 });
    const page = rows.slice(0, q.limit);
    const last = page[page.length - 1];
    return {
      attempts: page.map(toAttemptDocument),
      next_cursor: rows.length > q.limit ? encodeCursor(ATTEMPT_CURSOR, scope, { at: formatTimeRequired(last.attemptedAt), id: last.id }) : null,
    };
  }

  async found(workspaceId: string, id: string): Promise<NotificationEndpoint> {
    const row = await this.endpoints.find(workspaceId, id);
    if (!row) throw new ApiError(404, ENDPOINT_NOT_FOUND);
    return row;
  }

  private checkEventTypes(types: string[]): void {
    const bad = types.findIndex((t) => !isEventPattern(t));
    if (bad >= 0) throw bodyError(['event_types', bad], 'must be an event type, a prefix.* pattern or *');
  }

  /** `https:` (or `http:` with NOTIFY_ALLOW_HTTP=1), and a host that is not, and does not resolve to, a private or local address. */
  private async checkUrl(text: string): Promise<void> {
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      throw bodyError(['url'], 'url must be an absolute URL');
    }
    const schemes = this.config.notify.allowHttp ? ['https:', 'http:'] : ['https:'];
    if (!schemes.includes(url.protocol)) throw bodyError(['url'], this.config.notify.allowHttp ? 'url must use https or http' : 'url must use https');
    if (this.config.notify.allowPrivateTargets) return;
    const addresses = await withDeadline(addressesOf(hostOf(url)), RESOLVE_TIMEOUT_MS, 'DNS').catch(() => []);
    if (addresses.some((a) => isRefusedAddress(a.address))) throw bodyError(['url'], PRIVATE_TARGET);
  }
}
