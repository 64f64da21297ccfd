import { OutboxService } from 'src/modules/notifications/outbox.service';
import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { DataSource, EntityManager } from 'typeorm';
import { Env, WorkspaceContext } from 'src/platform/access/context';
import { WorkspaceAccess } from 'src/platform/access/workspace-access.service';
import { sha256Hex } from 'src/common/crypto/crypto';
import { ApiError, badRequest, bodyError } from 'src/common/http/errors';
import { newId } from 'src/common/ids/ids';
import { formatTimeRequired, parseRfc3339 } from 'src/common/time/time';
import { secondsSince } from 'src/common/http/received-at';
import { inTransaction } from 'src/database/transaction';
import { namedQuery } from 'src/database/named-query';
import { AuditService } from 'src/modules/audit/audit.service';
import { KeyDocumentRow, keyColumns, keyDocumentColumns, KeyRow, keyStatus, keyStatusSql, toKeyContext, toKeyDocument } from 'src/modules/keys/dto/key.document';
import { MintKeyDto, SCOPES } from 'src/modules/keys/dto/mint-key.dto';
import { KeySort } from 'src/modules/keys/dto/key-list-query.dto';
import { APP_CONFIG, AppConfig } from 'src/config/config';
import { HotPath } from 'src/modules/publication/hot-path';
import { OverviewRegistry } from 'src/modules/workspaces/overview.registry';
import { settleAll } from 'src/database/settle-all';
import { errorFields } from 'src/common/logging/error-fields';
import { PendingRemovals } from 'src/modules/keys/pending-removals';

const PREFIXES = ['ob_live', 'ob_test'] as const;
const TOOLS_MODES = ['full', 'progressive'] as const;
/** Bytes of CSPRNG randomness in a secret (base64url: 43 header-safe characters). */
export const SECRET_BYTES = 32;
/** Largest `attributes` object, as JSON: it rides in every key context the gateway reads. */
export const MAX_ATTRIBUTES_BYTES = 16384;

type KeyContextRow = KeyRow & { env: Env; previous?: boolean };
/** Key syncs a reconcile pass runs at once: after an outage every pending revocation lands within seconds (bench/README.md). */
const SYNC_CONCURRENCY = 4;
/** What `hot_path` reports: Redis agrees with an active key (`published`) or with a revoked or expired one (`removed`), or not yet (`pending`). */
export type HotPathState = 'published' | 'removed' | 'pending';

/** Named statements (planned once per connection); the bench baseline runs the same ones. */
export const LIST = { name: 'keys_list', text: `SELECT ${keyDocumentColumns()} FROM virtual_keys WHERE workspace_id = $1 ORDER BY created_at, id` };
/** `sort=last_used`: never-used keys first, then the longest unused. */
const LIST_BY_LAST_USE = {
  name: 'keys_list_last_used',
  text: `SELECT ${keyDocumentColumns()} FROM virtual_keys WHERE workspace_id = $1 ORDER BY last_used_at ASC NULLS FIRST, created_at, id`,
};
/**
 * The key a digest names: its current secret, or the one its last rotation replaced while that is
 * still valid, or when the key was revoked inside that grace (it then answers `revoked`, never 404).
 * Joins workspaces (owned by workspaces) for `env` in the same statement: the gateway's key lookup is the hot path.
 */
export const BY_HASH = {
  name: 'keys_by_hash',
  text: `SELECT ${keyColumns('k')}, w.env, k.key_hash <> $1 AS previous FROM virtual_keys k JOIN workspaces w ON w.id = k.workspace_id
         WHERE k.key_hash = $1 OR (k.previous_key_hash = $1 AND (k.previous_valid_until > clock_timestamp() OR k.revoked_at <= k.previous_valid_until))`,
};
const COUNTS = {
  name: 'keys_overview',
  text: `SELECT count(*)::int AS total, count(*) FILTER (WHERE ${keyStatusSql()} = 'active')::int AS active FROM virtual_keys WHERE workspace_id = $1`,
};
const BUDGET_CAPS = {
  name: 'keys_budget_caps',
  text: `SELECT id, budget_micros_usd_month::text AS cap FROM virtual_keys
         WHERE workspace_id = $1 AND budget_micros_usd_month IS NOT NULL AND ${keyStatusSql()} <> 'revoked' ORDER BY id`,
};

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
  private readonly logger = new Logger('keys');

  constructor(
    private readonly dataSource: DataSource,
    private readonly access: WorkspaceAccess,
    private readonly audit: AuditService,
    private readonly hotPath: HotPath,
    private readonly overviews: OverviewRegistry,
    private readonly pending: PendingRemovals,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly outbox: OutboxService,
  ) {}

  onModuleInit(): void {
    this.overviews.register('keys', async (workspaceId) => {
      const [row] = await namedQuery<{ total: number; active: number }>(this.dataSource, COUNTS, [workspaceId]);
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
      const [inserted]: KeyDocumentRow[] = await tx.manager.query(
        `INSERT INTO virtual_keys (id, workspace_id, agent_id, prefix, key_hash, last4, allowed_models, allowed_tools, tools_mode,
           budget_micros_usd_month, rpm, tpm, scopes, attributes, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING ${keyDocumentColumns()}`,
        [
          newId('key'), ws.id, body.agent_id, prefix, sha256Hex(plaintext), last4,
          JSON.stringify(body.allowed_models ?? ['*']), JSON.stringify(body.allowed_tools ?? ['*']), toolsMode,
          body.budget_micros_usd_month ?? null, body.rpm ?? null, body.tpm ?? null, JSON.stringify(scopes), attributes, expiresAt,
        ],
      );
      await this.audit.record(tx, {
        workspaceId: ws.id,
        actor: ws.operator,
        action: 'key.mint',
        target: inserted.id,
        detail: { agent_id: inserted.agent_id, prefix, last4, tools_mode: toolsMode, scopes },
      });
      tx.afterCommit(() => this.sync(inserted.id));
      return inserted;
    });
    return { ...this.document(row), plaintext };
  }

  async list(ws: WorkspaceContext, sort: KeySort = 'created') {
    const rows = await namedQuery<KeyDocumentRow>(this.dataSource, sort === 'last_used' ? LIST_BY_LAST_USE : LIST, [ws.id]);
    const now = new Date();
    return { keys: rows.map((row) => toKeyDocument(row, now, this.config.keyIdleDays)) };
  }

  /**
   * One key, with `hot_path`: `pending` while Redis may still disagree with the database (a write
   * or a removal not yet confirmed), else `published` for an active key and `removed` for any other.
   */
  async get(ws: WorkspaceContext, keyId: string) {
    const [row]: (KeyDocumentRow & { hot_path_pending: boolean; removal_due: boolean })[] = await this.dataSource.query(
      `SELECT ${keyDocumentColumns('k')}, k.hot_path_pending,
              EXISTS (SELECT 1 FROM virtual_key_removals r WHERE r.key_id = k.id AND r.due_at <= clock_timestamp()) AS removal_due
       FROM virtual_keys k WHERE k.id = $1 AND k.workspace_id = $2`,
      [keyId, ws.id],
    );
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
      const [current]: (KeyRow & { rotated_since_arrival: boolean })[] = await tx.manager.query(
        `SELECT ${keyColumns()}, COALESCE(rotated_at >= clock_timestamp() - make_interval(secs => $3), false) AS rotated_since_arrival
         FROM virtual_keys WHERE id = $1 AND workspace_id = $2 FOR UPDATE`,
        [keyId, ws.id, secondsSince(rotation.receivedAt)],
      );
      if (!current) throw new ApiError(404, 'key not found');
      const status = keyStatus(current, new Date());
      if (status === 'revoked') throw new ApiError(409, 'key is revoked and cannot be rotated');
      if (status === 'expired') throw new ApiError(409, 'key has expired and cannot be rotated');
      const raced = rotation.expectedLast4 === undefined ? current.rotated_since_arrival : rotation.expectedLast4 !== current.last4;
      if (raced) throw new ApiError(409, 'key was rotated by a concurrent request');

      const secret = newSecret(current.prefix);
      const [[rotated]]: [KeyDocumentRow[], number] = await tx.manager.query(
        `WITH t AS (SELECT clock_timestamp() AS now)
         UPDATE virtual_keys SET previous_key_hash = key_hash, previous_last4 = last4,
           previous_valid_until = LEAST(t.now + make_interval(secs => $3), expires_at), rotated_at = t.now,
           key_hash = $4, last4 = $5, hot_path_pending = true
         FROM t WHERE id = $1 AND workspace_id = $2 RETURNING ${keyDocumentColumns('virtual_keys')}`,
        [keyId, ws.id, rotation.graceSeconds, sha256Hex(secret), secret.slice(-4)],
      );
      // The replaced digest leaves the hot path when its grace ends; one still in an earlier grace leaves now.
      const removals: [string, Date][] = [[rotated.previous_key_hash!, rotated.previous_valid_until!]];
      if (current.previous_key_hash && current.previous_valid_until! > rotated.rotated_at!) removals.push([current.previous_key_hash, rotated.rotated_at!]);
      await tx.manager.query(
        `INSERT INTO virtual_key_removals (key_hash, key_id, workspace_id, due_at)
         SELECT h, $2, $3, d FROM unnest($1::text[], $4::timestamptz[]) AS r(h, d)
         ON CONFLICT (key_hash) DO UPDATE SET due_at = LEAST(virtual_key_removals.due_at, EXCLUDED.due_at)`,
        [removals.map(([hash]) => hash), keyId, ws.id, removals.map(([, due]) => due.toISOString())],
      );
      await this.audit.record(tx, {
        workspaceId: ws.id,
        actor: ws.operator,
        action: 'key.rotate',
        target: rotated.id,
        detail: { key_id: rotated.id, last4: rotated.last4, prefix: rotated.prefix },
      });
      await this.outbox.emit(tx, ws.id, 'key.rotated', { key_id: rotated.id, agent_id: rotated.agent_id });
      tx.afterCommit(() => this.settle(rotated.id));
      return [rotated, secret] as const;
    });
    return { ...this.document(row), plaintext };
  }

  /** Idempotent: a revoked key stays as it is (same `revoked_at`, no second audit row). */
  async revoke(ctx: WorkspaceContext, keyId: string) {
    const row = await this.access.mutate(ctx, async (tx, ws) => {
      const [current]: KeyDocumentRow[] = await tx.manager.query(
        `SELECT ${keyDocumentColumns()} FROM virtual_keys WHERE id = $1 AND workspace_id = $2 FOR UPDATE`,
        [keyId, ws.id],
      );
      if (!current) throw new ApiError(404, 'key not found');
      if (current.revoked_at) return current;
      // Both secrets end now: a replaced one still in its grace too (its removal is due at once).
      // UPDATE ... RETURNING answers [rows, count] through TypeORM.
      const [[revoked]]: [KeyDocumentRow[], number] = await tx.manager.query(
        `WITH t AS (SELECT clock_timestamp() AS now)
         UPDATE virtual_keys SET revoked_at = t.now, previous_valid_until = LEAST(previous_valid_until, t.now), hot_path_pending = true
         FROM t WHERE id = $1 AND workspace_id = $2 RETURNING ${keyDocumentColumns('virtual_keys')}`,
        [keyId, ws.id],
      );
      await tx.manager.query(`UPDATE virtual_key_removals SET due_at = LEAST(due_at, $2) WHERE key_id = $1`, [keyId, revoked.revoked_at]);
      await this.audit.record(tx, {
        workspaceId: ws.id,
        actor: ws.operator,
        action: 'key.revoke',
        target: revoked.id,
        detail: { agent_id: revoked.agent_id, prefix: revoked.prefix, last4: revoked.last4 },
      });
      await this.outbox.emit(tx, ws.id, 'key.revoked', { key_id: revoked.id, agent_id: revoked.agent_id });
      tx.afterCommit(() => this.settle(revoked.id));
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
    const [row] = await namedQuery<KeyContextRow>(this.dataSource, BY_HASH, [keyHash]);
    return row ? JSON.stringify(toKeyContext(row, new Date())) : null;
  }

  /**
   * After commit of a revoke or rotation: the sync, and when its Redis delete did not land, the
   * wait after which no replica can still answer the removed digest from Redis.
   */
  private async settle(keyId: string): Promise<void> {
    if (!(await this.sync(keyId))) await this.pending.outwait();
  }

  /**
   * Makes the hot path agree with the committed key: an active key's context is written under its
   * digest (expiring at `expires_at`) and under the replaced secret's digest while that is in its
   * grace (expiring at `valid_until`); any other key's digests are deleted, and so is every digest
   * whose removal is due. Then the pending flag and the settled removals are cleared. Runs under
   * the key's row lock, so a sync can never overwrite the outcome of a later revoke or rotation.
   * False when deferred.
   */
  async sync(keyId: string): Promise<boolean> {
    try {
      return await this.dataSource.transaction(async (manager) => {
        // The same join as BY_HASH: the hot-path entry is built from exactly what the lookup reads.
        const [row]: KeyContextRow[] = await manager.query(
          `SELECT ${keyColumns('k')}, w.env FROM virtual_keys k JOIN workspaces w ON w.id = k.workspace_id WHERE k.id = $1 FOR UPDATE OF k`,
          [keyId],
        );
        if (!row) return false;
        const now = new Date();
        const active = keyStatus(row, now) === 'active';
        const due: { key_hash: string }[] = await manager.query(
          `SELECT key_hash FROM virtual_key_removals WHERE key_id = $1 AND due_at <= clock_timestamp() ORDER BY key_hash FOR UPDATE`,
          [keyId],
        );
        // Issued together (node-redis pipelines commands of one tick); one key per command, so Redis Cluster is fine.
        const writes: Promise<void>[] = [];
        const name = this.hotPath.keyName(row.key_hash);
        writes.push(active ? this.hotPath.set(name, JSON.stringify(toKeyContext(row, now)), row.expires_at) : this.hotPath.delete(name));
        if (row.previous_key_hash) {
          const previous = this.hotPath.keyName(row.previous_key_hash);
          const validUntil = row.previous_valid_until!;
          writes.push(
            active && validUntil > now
              ? this.hotPath.set(previous, JSON.stringify(toKeyContext({ ...row, previous: true }, now)), validUntil)
              : this.hotPath.delete(previous),
          );
        }
        for (const { key_hash } of due) writes.push(this.hotPath.delete(this.hotPath.keyName(key_hash)));
        await Promise.all(writes);
        if (due.length > 0) await manager.query(`DELETE FROM virtual_key_removals WHERE key_id = $1 AND key_hash = ANY($2)`, [keyId, due.map((r) => r.key_hash)]);
        await manager.query(`UPDATE virtual_keys SET hot_path_pending = false WHERE id = $1`, [keyId]);
        return true;
      });
    } catch (error) {
      this.logger.warn({ msg: 'key context sync deferred', key_id: keyId, ...errorFields(error) });
      return false;
    }
  }

  /** How many of the workspace's keys are active now. */
  async activeCount(workspaceId: string): Promise<number> {
    const [row]: { active: number }[] = await this.dataSource.query(
      `SELECT count(*)::int AS active FROM virtual_keys WHERE workspace_id = $1 AND ${keyStatusSql()} = 'active'`,
      [workspaceId],
    );
    return row.active;
  }

  /** Whether `agentId` holds an active key of the workspace (read in `manager`, e.g. a caller's transaction). */
  async hasActiveKey(manager: EntityManager, workspaceId: string, agentId: string): Promise<boolean> {
    const rows: unknown[] = await manager.query(
      `SELECT 1 FROM virtual_keys WHERE workspace_id = $1 AND agent_id = $2 AND ${keyStatusSql()} = 'active' LIMIT 1`,
      [workspaceId, agentId],
    );
    return rows.length > 0;
  }

  /** The agent a key of the workspace belongs to (read in `manager`, e.g. a caller's transaction); null for an unknown key. */
  async agentOf(manager: EntityManager, workspaceId: string, keyId: string): Promise<string | null> {
    const [row]: { agent_id: string }[] = await manager.query(`SELECT agent_id FROM virtual_keys WHERE workspace_id = $1 AND id = $2`, [workspaceId, keyId]);
    return row?.agent_id ?? null;
  }

  /**
   * `key.expiring` once per key (and expiry: a key whose expiry is moved is told again) for every
   * unrevoked key expiring within NOTIFY_KEY_EXPIRING_DAYS; the outbox's dedupe key makes a
   * second replica's pass or a repeated pass emit nothing. Answers how many were emitted.
   */
  async notifyExpiring(now = new Date()): Promise<number> {
    const horizon = new Date(now.getTime() + this.config.notify.keyExpiringDays * 86_400_000);
    const rows: { id: string; workspace_id: string; agent_id: string; expires_at: Date }[] = await this.dataSource.query(
      `SELECT id, workspace_id, agent_id, expires_at FROM virtual_keys WHERE revoked_at IS NULL AND expires_at > $1 AND expires_at <= $2 ORDER BY expires_at`,
      [now, horizon],
    );
    let emitted = 0;
    for (const row of rows) {
      const expiresAt = formatTimeRequired(row.expires_at);
      const id = await inTransaction(this.dataSource, (tx) =>
        this.outbox.emit(tx, row.workspace_id, 'key.expiring', { key_id: row.id, agent_id: row.agent_id, expires_at: expiresAt }, { dedupeKey: `key.expiring:${row.id}:${expiresAt}` }),
      );
      if (id) emitted++;
    }
    return emitted;
  }

  /** Every key with a monthly cap that is not revoked (an expired key still shows this month's spend), by id. */
  budgetCaps(workspaceId: string): Promise<{ id: string; cap: string }[]> {
    return namedQuery(this.dataSource, BUDGET_CAPS, [workspaceId]);
  }

  /**
   * One pass of the sync job over every key whose hot-path state is pending or that has a digest
   * due for removal (a grace that ended, whatever Redis's own expiry did); returns how many settled.
   */
  reconcile(pageSize = 100): Promise<number> {
    return settleAll(
      this.dataSource,
      `SELECT id FROM virtual_keys WHERE hot_path_pending AND id > $1
       UNION SELECT key_id FROM virtual_key_removals WHERE due_at <= clock_timestamp() AND key_id > $1
       ORDER BY id LIMIT $2`,
      (id) => this.sync(id),
      pageSize,
      SYNC_CONCURRENCY,
    );
  }

  private document(row: KeyDocumentRow) {
    return toKeyDocument(row, new Date(), this.config.keyIdleDays);
  }
}
