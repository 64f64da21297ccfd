import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { EntityManager } from 'typeorm';
import { WorkspaceContext } from 'src/platform/access/context';
import { WorkspaceAccess } from 'src/platform/access/workspace-access.service';
import { sha256Hex } from 'src/common/crypto/crypto';
import { ApiError, badRequest, bodyError } from 'src/common/http/errors';
import { newId } from 'src/common/ids/ids';
import { parseRfc3339 } from 'src/common/time/time';
import { secondsSince } from 'src/common/http/received-at';
import { APP_CONFIG, AppConfig } from 'src/config/config';
import { AuditService } from 'src/modules/audit/audit.service';
import { OutboxService } from 'src/modules/notifications/outbox.service';
import { HotPath } from 'src/modules/publication/hot-path';
import { OverviewRegistry } from 'src/modules/workspaces/overview.registry';
import { KeyDocumentRow, keyStatus, toKeyContext, toKeyDocument } from 'src/modules/keys/dto/key.document';
import { MintKeyDto, SCOPES } from 'src/modules/keys/dto/mint-key.dto';
import { KeySort } from 'src/modules/keys/dto/key-list-query.dto';
import { KeySync } from 'src/modules/keys/key-sync.service';
import { PendingRemovals } from 'src/modules/keys/pending-removals';
import { VirtualKeyRemovalsRepository } from 'src/modules/keys/virtual-key-removals.repository';
import { VirtualKeysRepository } from 'src/modules/keys/virtual-keys.repository';

const PREFIXES = ['ob_live', 'ob_test'] as const;
const TOOLS_MODES = ['full', 'progressive'] as const;
/** Bytes of CSPRNG randomness in a secret (base64url: 43 header-safe characters). */
export const SECRET_BYTES = 32;
/** Largest `attributes` object, as JSON: it rides in every key context the gateway reads. */
export const MAX_ATTRIBUTES_BYTES = 16384;

/** What `hot_path` reports: Redis agrees with an active key (`published`) or with a revoked or expired one (`removed`), or not yet (`pending`). */
export type HotPathState = 'published' | 'removed' | 'pending';

/** The named statements the bench baseline runs too. */
export { BY_HASH, LIST } from 'src/modules/keys/virtual-keys.repository';

/** `{prefix}_` plus 32 random bytes in base64url (A-Z a-z 0-9 - _), safe in an Authorization header. */
export function newSecret(prefix: string): string {
  return `${prefix}_${randomBytes(SECRET_BYTES).toString('base64url')}`;
}

const TIME_FIELDS = ['"expires_at":"', '"valid_until":"'];
/**
 * Whether a stored key context names an `expires_at` or `valid_until` already past: then it is not
 * answered (PostgreSQL computes the status on this clock, not on Redis's expiry). Every occurrence
 * counts, so a same-named field inside `attributes` can only send the lookup to PostgreSQL.
 */
export function lapsed(context: string, now: number): boolean {
  for (const field of TIME_FIELDS) {
    for (let at = context.indexOf(field); at !== -1; at = context.indexOf(field, at + 1)) {
      const start = at + field.length;
      if (Date.parse(context.slice(start, context.indexOf('"', start))) <= now) return true;
    }
  }
  return false;
}

function oneOf<T extends string>(value: unknown, allowed: readonly T[], fallback: T, message: string): T {
  if (value === undefined || value === null) return fallback;
  if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) return value as T;
  throw badRequest(message);
}

/**
 * Virtual keys: mint (the secret is returned once; only its sha256 and last4 are stored), list,
 * read, rotate, revoke. After commit the key context is synchronized to the hot path; a failure there leaves
 * the key `hot_path_pending` for the sync job and never fails the request.
 */
@Injectable()
export class KeysService implements OnModuleInit {
  constructor(
    private readonly keys: VirtualKeysRepository,
    private readonly removals: VirtualKeyRemovalsRepository,
    private readonly access: WorkspaceAccess,
    private readonly audit: AuditService,
    private readonly hotPath: HotPath,
    private readonly overviews: OverviewRegistry,
    private readonly pending: PendingRemovals,
    private readonly keySync: KeySync,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly outbox: OutboxService,
  ) {}

  onModuleInit(): void {
    this.overviews.register('keys', async (workspaceId) => {
      const row = await this.keys.counts(workspaceId);
      return { active: row.active, total: row.total };
    });
  }

  async mint(ctx: WorkspaceContext, body: MintKeyDto) {
    const prefix = oneOf(body.prefix, PREFIXES, ctx.env === 'prod' ? 'ob_live' : 'ob_test', 'prefix must be ob_live or ob_test');
    if (prefix === 'ob_test' && ctx.env === 'prod') throw badRequest('ob_test keys are not allowed in a prod workspace');
    const toolsMode = oneOf(body.tools_mode, TOOLS_MODES, 'full', 'tools_mode must be full or progressive');
    let expiresAt: Date | null = null;
    if (body.expires_at !== undefined && body.expires_at !== null) {
      expiresAt = parseRfc3339(body.expires_at);
      if (!expiresAt) throw bodyError(['expires_at'], 'expires_at must be an RFC 3339 timestamp');
    }
    const attributes = JSON.stringify(body.attributes ?? {});
    if (Buffer.byteLength(attributes) > MAX_ATTRIBUTES_BYTES) throw bodyError(['attributes'], `attributes must be at most ${MAX_ATTRIBUTES_BYTES} bytes of JSON`);
    const scopes = body.scopes ?? [...SCOPES];

    const plaintext = newSecret(prefix);
    const last4 = plaintext.slice(-4);
    const row = await this.access.mutate(ctx, async (tx, ws) => {
      const inserted = await this.keys.insert(tx.manager, {
        id: newId('key'),
        workspaceId: ws.id,
        // A workspace's env never changes after creation: the key keeps a copy for the lookup (migration 1763769740000).
        env: ws.env,
        agentId: body.agent_id,
        prefix,
        keyHash: sha256Hex(plaintext),
        last4,
        allowedModels: body.allowed_models ?? ['*'],
        allowedTools: body.allowed_tools ?? ['*'],
        toolsMode,
        budgetMicrosUsdMonth: body.budget_micros_usd_month ?? null,
        rpm: body.rpm ?? null,
        tpm: body.tpm ?? null,
        scopes,
        attributes,
        expiresAt,
      });
      await this.audit.record(tx, {
        workspaceId: ws.id,
        actor: ws.operator,
        action: 'key.mint',
        target: inserted.id,
        detail: { agent_id: inserted.agent_id, prefix, last4, tools_mode: toolsMode, scopes },
      });
      tx.afterCommit(() => this.keySync.sync(inserted.id));
      return inserted;
    });
    return { ...this.document(row), plaintext };
  }

  async list(ws: WorkspaceContext, sort: KeySort = 'created') {
    const rows = await this.keys.list(ws.id, sort);
    const now = new Date();
    return { keys: rows.map((row) => toKeyDocument(row, now, this.config.keyIdleDays)) };
  }

  /**
   * One key, with `hot_path`: `pending` while Redis may still disagree with the database (a write
   * or a removal not yet confirmed), else `published` for an active key and `removed` for any other.
   */
  async get(ws: WorkspaceContext, keyId: string) {
    const row = await this.keys.document(ws.id, keyId);
    if (!row) throw new ApiError(404, 'key not found');
    const document = this.document(row);
    const hotPath: HotPathState = row.hot_path_pending || row.removal_due ? 'pending' : document.status === 'active' ? 'published' : 'removed';
    return { ...document, hot_path: hotPath };
  }

  /**
   * A new secret for the same key (same `key_id`, settings, budget and rate windows). The replaced
   * secret stays valid until the earlier of now + `graceSeconds` and the key's expiry; a secret
   * still in an earlier rotation's grace ends at once, so at most two are ever valid. With
   * `expectedLast4`, the rotation applies only to that secret (409 when the current one is
   * another). Without it, a rotation that arrived before the key's last rotation was written raced
   * it: 409, nothing written. The arrival is dated on the database's clock (its clock now, less the
   * time elapsed since arrival on this process's monotonic clock), the clock `rotated_at` is written
   * with, so the rule holds whatever this host's wall clock says.
   */
  async rotate(ctx: WorkspaceContext, keyId: string, rotation: { graceSeconds: number; expectedLast4?: string; receivedAt: number }) {
    const [row, plaintext] = await this.access.mutate(ctx, async (tx, ws) => {
      const current = await this.keys.lockForRotation(tx.manager, ws.id, keyId, secondsSince(rotation.receivedAt));
      if (!current) throw new ApiError(404, 'key not found');
      const status = keyStatus(current, new Date());
      if (status === 'revoked') throw new ApiError(409, 'key is revoked and cannot be rotated');
      if (status === 'expired') throw new ApiError(409, 'key has expired and cannot be rotated');
      const raced = rotation.expectedLast4 === undefined ? current.rotated_since_arrival : rotation.expectedLast4 !== current.last4;
      if (raced) throw new ApiError(409, 'key was rotated by a concurrent request');

      const secret = newSecret(current.prefix);
      const rotated = await this.keys.rotate(tx.manager, ws.id, keyId, rotation.graceSeconds, sha256Hex(secret), secret.slice(-4));
      // The replaced digest leaves the hot path when its grace ends; one still in an earlier grace leaves now.
      const removals: [string, Date][] = [[rotated.previous_key_hash!, rotated.previous_valid_until!]];
      if (current.previous_key_hash && current.previous_valid_until! > rotated.rotated_at!) removals.push([current.previous_key_hash, rotated.rotated_at!]);
      await this.removals.schedule(tx.manager, keyId, ws.id, removals);
      await this.audit.record(tx, {
        workspaceId: ws.id,
        actor: ws.operator,
        action: 'key.rotate',
        target: rotated.id,
        detail: { key_id: rotated.id, last4: rotated.last4, prefix: rotated.prefix },
      });
      await this.outbox.emit(tx, ws.id, 'key.rotated', { key_id: rotated.id, agent_id: rotated.agent_id });
      tx.afterCommit(() => this.keySync.settle(rotated.id));
      return [rotated, secret] as const;
    });
    return { ...this.document(row), plaintext };
  }

  /** Idempotent: a revoked key stays as it is (same `revoked_at`, no second audit row). */
  async revoke(ctx: WorkspaceContext, keyId: string) {
    const row = await this.access.mutate(ctx, async (tx, ws) => {
      const current = await this.keys.lockDocument(tx.manager, ws.id, keyId);
      if (!current) throw new ApiError(404, 'key not found');
      if (current.revoked_at) return current;
      // Both secrets end now: a replaced one still in its grace too (its removal is due at once).
      const revoked = await this.keys.revoke(tx.manager, ws.id, keyId);
      await this.removals.bringForward(tx.manager, keyId, revoked.revoked_at!);
      await this.audit.record(tx, {
        workspaceId: ws.id,
        actor: ws.operator,
        action: 'key.revoke',
        target: revoked.id,
        detail: { agent_id: revoked.agent_id, prefix: revoked.prefix, last4: revoked.last4 },
      });
      await this.outbox.emit(tx, ws.id, 'key.revoked', { key_id: revoked.id, agent_id: revoked.agent_id });
      tx.afterCommit(() => this.keySync.settle(revoked.id));
      return revoked;
    });
    return this.document(row);
  }

  /**
   * The key context for a sha256 digest, as JSON text: the hot path's copy, as stored, when it is
   * provably current (no removal of the digest pending on this replica's fresh copy of the set, and
   * no `expires_at`/`valid_until` passed by this clock), else PostgreSQL's (any status; null for an
   * unknown digest, a replaced secret past its grace, or a missing workspace). docs/decisions.md
   * has the argument that no lookup after a revoke's 200 answers `active`.
   */
  async context(keyHash: string): Promise<string | null> {
    if (this.pending.servable(keyHash)) {
      const stored = await this.hotPath.get(this.hotPath.keyName(keyHash)).catch(() => null);
      // Checked again: the digest may have entered the set while Redis answered.
      if (stored !== null && this.pending.servable(keyHash) && !lapsed(stored, Date.now())) return stored;
    }
    const row = await this.keys.byHash(keyHash);
    return row ? JSON.stringify(toKeyContext(row, new Date())) : null;
  }

  /** One pass of the key sync (KeySync.reconcile); returns how many keys settled. */
  reconcile(pageSize = 100): Promise<number> {
    return this.keySync.reconcile(pageSize);
  }

  /** How many of the workspace's keys are active now. */
  activeCount(workspaceId: string): Promise<number> {
    return this.keys.activeCount(workspaceId);
  }

  /** Whether `agentId` holds an active key of the workspace (read in `manager`, e.g. a caller's transaction). */
  hasActiveKey(manager: EntityManager, workspaceId: string, agentId: string): Promise<boolean> {
    return this.keys.hasActiveKey(manager, workspaceId, agentId);
  }

  /** Every key with a monthly cap that is not revoked (an expired key still shows this month's spend), by id. */
  budgetCaps(workspaceId: string): Promise<{ id: string; cap: string }[]> {
    return this.keys.budgetCaps(workspaceId);
  }

  private document(row: KeyDocumentRow) {
    return toKeyDocument(row, new Date(), this.config.keyIdleDays);
  }
}
