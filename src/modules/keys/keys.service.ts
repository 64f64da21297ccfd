import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { DataSource, EntityManager } from 'typeorm';
import { Env, WorkspaceContext } from 'src/common/access/context';
import { WorkspaceAccess } from 'src/common/access/workspace-access.service';
import { sha256Hex } from 'src/common/crypto/crypto';
import { ApiError, badRequest, bodyError } from 'src/common/http/errors';
import { newId } from 'src/common/ids/ids';
import { parseRfc3339 } from 'src/common/time/time';
import { namedQuery } from 'src/database/named-query';
import { AuditService } from 'src/modules/audit/audit.service';
import { KeyRow, keyColumns, keyStatus, keyStatusSql, toKeyContext, toKeyDocument } from 'src/modules/keys/dto/key.document';
import { MintKeyDto, SCOPES } from 'src/modules/keys/dto/mint-key.dto';
import { HotPath } from 'src/modules/publication/hot-path';
import { OverviewRegistry } from 'src/modules/workspaces/overview.registry';
import { settleAll } from 'src/database/settle-all';
import { errorFields } from 'src/common/logging/error-fields';

const PREFIXES = ['ob_live', 'ob_test'] as const;
const TOOLS_MODES = ['full', 'progressive'] as const;
/** Bytes of CSPRNG randomness in a secret (base64url: 43 header-safe characters). */
export const SECRET_BYTES = 32;
/** Largest `attributes` object, as JSON: it rides in every key context the gateway reads. */
export const MAX_ATTRIBUTES_BYTES = 16384;

type KeyContextRow = KeyRow & { env: Env };

/** Named statements (planned once per connection); the bench baseline runs the same ones. */
export const LIST = { name: 'keys_list', text: `SELECT ${keyColumns()} FROM virtual_keys WHERE workspace_id = $1 ORDER BY created_at, id` };
// Joins workspaces (owned by workspaces) for `env` in the same statement: the gateway's key lookup is the hot path.
export const BY_HASH = {
  name: 'keys_by_hash',
  text: `SELECT ${keyColumns('k')}, w.env FROM virtual_keys k JOIN workspaces w ON w.id = k.workspace_id WHERE k.key_hash = $1`,
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

function oneOf<T extends string>(value: unknown, allowed: readonly T[], fallback: T, message: string): T {
  if (value === undefined || value === null) return fallback;
  if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) return value as T;
  throw badRequest(message);
}

/**
 * Virtual keys: mint (the secret is returned once; only its sha256 and last4 are stored), list,
 * revoke. After commit the key context is synchronized to the hot path; a failure there leaves
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
  ) {}

  onModuleInit(): void {
    this.overviews.register('keys', async (dataSource, workspaceId) => {
      const [row] = await namedQuery<{ total: number; active: number }>(dataSource, COUNTS, [workspaceId]);
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
      const [inserted]: KeyRow[] = await tx.manager.query(
        `INSERT INTO virtual_keys (id, workspace_id, agent_id, prefix, key_hash, last4, allowed_models, allowed_tools, tools_mode,
           budget_micros_usd_month, rpm, tpm, scopes, attributes, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING ${keyColumns()}`,
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
    return { ...toKeyDocument(row, new Date()), plaintext };
  }

  async list(ws: WorkspaceContext) {
    const rows = await namedQuery<KeyRow>(this.dataSource, LIST, [ws.id]);
    const now = new Date();
    return { keys: rows.map((row) => toKeyDocument(row, now)) };
  }

  /** Idempotent: a revoked key stays as it is (same `revoked_at`, no second audit row). */
  async revoke(ctx: WorkspaceContext, keyId: string) {
    const row = await this.access.mutate(ctx, async (tx, ws) => {
      const [current]: KeyRow[] = await tx.manager.query(
        `SELECT ${keyColumns()} FROM virtual_keys WHERE id = $1 AND workspace_id = $2 FOR UPDATE`,
        [keyId, ws.id],
      );
      if (!current) throw new ApiError(404, 'key not found');
      if (current.revoked_at) return current;
      // UPDATE ... RETURNING answers [rows, count] through TypeORM.
      const [[revoked]]: [KeyRow[], number] = await tx.manager.query(
        `UPDATE virtual_keys SET revoked_at = clock_timestamp(), hot_path_pending = true WHERE id = $1 AND workspace_id = $2 RETURNING ${keyColumns()}`,
        [keyId, ws.id],
      );
      await this.audit.record(tx, {
        workspaceId: ws.id,
        actor: ws.operator,
        action: 'key.revoke',
        target: revoked.id,
        detail: { agent_id: revoked.agent_id, prefix: revoked.prefix, last4: revoked.last4 },
      });
      tx.afterCommit(() => this.sync(revoked.id));
      return revoked;
    });
    return toKeyDocument(row, new Date());
  }

  /**
   * The key context for a sha256 digest, as JSON text: from the hot path when it holds the key,
   * else from PostgreSQL (any status; null for an unknown digest or a missing workspace).
   */
  async context(keyHash: string): Promise<string | null> {
    try {
      const cached = await this.hotPath.get(this.hotPath.keyName(keyHash));
      if (cached !== null) return cached;
    } catch {
      // Hot path down: PostgreSQL answers.
    }
    const [row] = await namedQuery<KeyContextRow>(this.dataSource, BY_HASH, [keyHash]);
    return row ? JSON.stringify(toKeyContext(row, new Date())) : null;
  }

  /**
   * Makes the hot path agree with the committed key: an active key's context is written (expiring
   * at `expires_at`), any other is deleted; then the pending flag is cleared. Runs under the key's
   * row lock, so a sync can never overwrite the outcome of a later revoke. False when deferred.
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
        const name = this.hotPath.keyName(row.key_hash);
        const now = new Date();
        if (keyStatus(row, now) === 'active') await this.hotPath.set(name, JSON.stringify(toKeyContext(row, now)), row.expires_at);
        else await this.hotPath.delete(name);
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

  /** Every key with a monthly cap that is not revoked (an expired key still shows this month's spend), by id. */
  budgetCaps(workspaceId: string): Promise<{ id: string; cap: string }[]> {
    return namedQuery(this.dataSource, BUDGET_CAPS, [workspaceId]);
  }

  /** One pass of the sync job over every key whose hot-path state is pending; returns how many settled. */
  reconcile(pageSize = 100): Promise<number> {
    return settleAll(this.dataSource, `SELECT id FROM virtual_keys WHERE hot_path_pending AND id > $1 ORDER BY id LIMIT $2`, (id) => this.sync(id), pageSize);
  }
}
