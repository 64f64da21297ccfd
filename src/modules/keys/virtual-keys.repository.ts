import { Injectable } from '@nestjs/common';
import { And, DataSource, EntityManager, IsNull, LessThanOrEqual, MoreThan } from 'typeorm';
import { Env } from 'src/platform/access/context';
import { namedQuery } from 'src/database/named-query';
import { KeyDocumentRow, keyColumns, keyDocumentColumns, KeyRow, keyStatusSql } from 'src/modules/keys/dto/key.document';
import { KeySort } from 'src/modules/keys/dto/key-list-query.dto';
import { VirtualKey } from 'src/modules/keys/entities/virtual-key.entity';
import { workspaceExists } from 'src/platform/tenancy/workspaces.repository';

/** What the key context is built from: the stored key, its workspace's env, and whether the digest asked for is the replaced secret. */
export type KeyContextRow = KeyRow & { env: Env; previous?: boolean };

/** Named statements (planned once per connection); the bench baseline runs the same ones. */
// hand-written: the key list, a measured hot path (bench/README.md, "key list"): named, with `last_used_at` from virtual_key_usage.
export const LIST = { name: 'keys_list', text: `SELECT ${keyDocumentColumns()} FROM virtual_keys WHERE workspace_id = $1 ORDER BY created_at, id` };
/** `sort=last_used`: never-used keys first, then the longest unused. */
// hand-written: the key list's other order (NULLS FIRST), named like LIST.
const LIST_BY_LAST_USE = {
  name: 'keys_list_last_used',
  text: `SELECT ${keyDocumentColumns()} FROM virtual_keys WHERE workspace_id = $1 ORDER BY last_used_at ASC NULLS FIRST, created_at, id`,
};
/**
 * The key a digest names: its current secret, or the one its last rotation replaced while that is
 * still valid, or when the key was revoked inside that grace (it then answers `revoked`, never 404).
 * `env` is the key's own copy of its workspace's (migration 1763769740000); the workspace's existence
 * (control-plane-core.md section 4: "unknown digest or missing workspace is 404") is checked in the
 * same statement through the tenancy's fragment, so the lookup stays one round trip.
 */
// hand-written: the gateway's key lookup, the measured hot path of issue 30 (bench/README.md, "key lookup"); named, on the pool.
export const BY_HASH = {
  name: 'keys_by_hash',
  text: `SELECT ${keyColumns('k')}, k.env, k.key_hash <> $1 AS previous FROM virtual_keys k
         WHERE (k.key_hash = $1 OR (k.previous_key_hash = $1 AND (k.previous_valid_until > clock_timestamp() OR k.revoked_at <= k.previous_valid_until)))
           AND ${workspaceExists('k.workspace_id')}`,
};
// hand-written: the status rule on the database clock (keyStatusSql), named: read by every overview.
const COUNTS = {
  name: 'keys_overview',
  text: `SELECT count(*)::int AS total, count(*) FILTER (WHERE ${keyStatusSql()} = 'active')::int AS active FROM virtual_keys WHERE workspace_id = $1`,
};
// hand-written: the status rule on the database clock and bigint as text, named: read by every usage summary.
const BUDGET_CAPS = {
  name: 'keys_budget_caps',
  text: `SELECT id, budget_micros_usd_month::text AS cap FROM virtual_keys
         WHERE workspace_id = $1 AND budget_micros_usd_month IS NOT NULL AND ${keyStatusSql()} <> 'revoked' ORDER BY id`,
};

/** A key as minted: every column the request sets (the rest take their defaults). */
export interface NewKey {
  id: string;
  workspaceId: string;
  env: Env;
  agentId: string;
  prefix: string;
  keyHash: string;
  last4: string;
  allowedModels: string[];
  allowedTools: string[];
  toolsMode: string;
  budgetMicrosUsdMonth: number | null;
  rpm: number | null;
  tpm: number | null;
  scopes: string[];
  attributes: string;
  expiresAt: Date | null;
}

/** Every statement on `virtual_keys` (and the `virtual_key_usage` time the key document shows). */
@Injectable()
export class VirtualKeysRepository {
  constructor(private readonly dataSource: DataSource) {}

  list(workspaceId: string, sort: KeySort): Promise<KeyDocumentRow[]> {
    return namedQuery<KeyDocumentRow>(this.dataSource, sort === 'last_used' ? LIST_BY_LAST_USE : LIST, [workspaceId]);
  }

  async byHash(keyHash: string): Promise<KeyContextRow | undefined> {
    const [row] = await namedQuery<KeyContextRow>(this.dataSource, BY_HASH, [keyHash]);
    return row;
  }

  async counts(workspaceId: string): Promise<{ total: number; active: number }> {
    const [row] = await namedQuery<{ total: number; active: number }>(this.dataSource, COUNTS, [workspaceId]);
    return row;
  }

  /** Every key with a monthly cap that is not revoked, by id. */
  budgetCaps(workspaceId: string): Promise<{ id: string; cap: string }[]> {
    return namedQuery(this.dataSource, BUDGET_CAPS, [workspaceId]);
  }

  /** One key's document row, with whether Redis may still disagree (pending flag, or a removal due). */
  async document(workspaceId: string, keyId: string): Promise<(KeyDocumentRow & { hot_path_pending: boolean; removal_due: boolean }) | undefined> {
    // hand-written: the KeyDocumentRow shape with an EXISTS over virtual_key_removals on the database clock.
    const [row]: (KeyDocumentRow & { hot_path_pending: boolean; removal_due: boolean })[] = await this.dataSource.query(
      `SELECT ${keyDocumentColumns('k')}, k.hot_path_pending,
              EXISTS (SELECT 1 FROM virtual_key_removals r WHERE r.key_id = k.id AND r.due_at <= clock_timestamp()) AS removal_due
       FROM virtual_keys k WHERE k.id = $1 AND k.workspace_id = $2`,
      [keyId, workspaceId],
    );
    return row;
  }

  /** Inserts a minted key; answers its document row. */
  async insert(manager: EntityManager, key: NewKey): Promise<KeyDocumentRow> {
    // hand-written: INSERT ... RETURNING the KeyDocumentRow shape the key document maps, in one round trip.
    const [inserted]: KeyDocumentRow[] = await manager.query(
      `INSERT INTO virtual_keys (id, workspace_id, env, agent_id, prefix, key_hash, last4, allowed_models, allowed_tools, tools_mode,
         budget_micros_usd_month, rpm, tpm, scopes, attributes, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) RETURNING ${keyDocumentColumns()}`,
      [
        key.id, key.workspaceId, key.env, key.agentId, key.prefix, key.keyHash, key.last4,
        JSON.stringify(key.allowedModels), JSON.stringify(key.allowedTools), key.toolsMode,
        key.budgetMicrosUsdMonth, key.rpm, key.tpm, JSON.stringify(key.scopes), key.attributes, key.expiresAt,
      ],
    );
    return inserted;
  }

  /** The key under a row lock, with whether it was rotated since `secondsAgo` on the database clock. */
  async lockForRotation(manager: EntityManager, workspaceId: string, keyId: string, secondsAgo: number) {
    // hand-written: FOR UPDATE with a comparison on the database clock (clock_timestamp), in the KeyRow shape.
    const [row]: (KeyRow & { rotated_since_arrival: boolean })[] = await manager.query(
      `SELECT ${keyColumns()}, COALESCE(rotated_at >= clock_timestamp() - make_interval(secs => $3), false) AS rotated_since_arrival
       FROM virtual_keys WHERE id = $1 AND workspace_id = $2 FOR UPDATE`,
      [keyId, workspaceId, secondsAgo],
    );
    return row;
  }

  /** The new secret replaces the current one, which stays valid for `graceSeconds` (never past the key's expiry). */
  async rotate(manager: EntityManager, workspaceId: string, keyId: string, graceSeconds: number, keyHash: string, last4: string): Promise<KeyDocumentRow> {
    // hand-written: one UPDATE from the row's own columns on the database clock, RETURNING the KeyDocumentRow shape.
    const [[rotated]]: [KeyDocumentRow[], number] = await manager.query(
      `WITH t AS (SELECT clock_timestamp() AS now)
       UPDATE virtual_keys SET previous_key_hash = key_hash, previous_last4 = last4,
         previous_valid_until = LEAST(t.now + make_interval(secs => $3), expires_at), rotated_at = t.now,
         key_hash = $4, last4 = $5, hot_path_pending = true
       FROM t WHERE id = $1 AND workspace_id = $2 RETURNING ${keyDocumentColumns('virtual_keys')}`,
      [keyId, workspaceId, graceSeconds, keyHash, last4],
    );
    return rotated;
  }

  /** The key's document row under a row lock. */
  async lockDocument(manager: EntityManager, workspaceId: string, keyId: string): Promise<KeyDocumentRow | undefined> {
    // hand-written: FOR UPDATE in the KeyDocumentRow shape (last_used_at from virtual_key_usage).
    const [row]: KeyDocumentRow[] = await manager.query(`SELECT ${keyDocumentColumns()} FROM virtual_keys WHERE id = $1 AND workspace_id = $2 FOR UPDATE`, [
      keyId,
      workspaceId,
    ]);
    return row;
  }

  /** Revokes the key now; a replaced secret still in its grace ends now too. */
  async revoke(manager: EntityManager, workspaceId: string, keyId: string): Promise<KeyDocumentRow> {
    // hand-written: one UPDATE on the database clock with LEAST over the row's own column, RETURNING the KeyDocumentRow shape.
    const [[revoked]]: [KeyDocumentRow[], number] = await manager.query(
      `WITH t AS (SELECT clock_timestamp() AS now)
       UPDATE virtual_keys SET revoked_at = t.now, previous_valid_until = LEAST(previous_valid_until, t.now), hot_path_pending = true
       FROM t WHERE id = $1 AND workspace_id = $2 RETURNING ${keyDocumentColumns('virtual_keys')}`,
      [keyId, workspaceId],
    );
    return revoked;
  }

  /** The key's context row under its row lock (the key sync): the same columns as BY_HASH. */
  async lockContext(manager: EntityManager, keyId: string): Promise<KeyContextRow | undefined> {
    // hand-written: FOR UPDATE OF k in the KeyRow shape toKeyContext maps; the same existence check as BY_HASH, so the
    // hot-path entry is built from exactly what the lookup reads.
    const [row]: KeyContextRow[] = await manager.query(
      `SELECT ${keyColumns('k')}, k.env FROM virtual_keys k WHERE k.id = $1 AND ${workspaceExists('k.workspace_id')} FOR UPDATE OF k`,
      [keyId],
    );
    return row;
  }

  async markSettled(manager: EntityManager, keyId: string): Promise<void> {
    await manager.update(VirtualKey, { id: keyId }, { hotPathPending: false });
  }

  /** Keys whose hot-path state is pending or with a digest due for removal, after `after` by id (a page of the key sync). */
  async unsettled(after: string, limit: number): Promise<string[]> {
    // hand-written: UNION of the two sources of work, due on the database clock, as one keyset page by id.
    const rows: { id: string }[] = await this.dataSource.query(
      `SELECT id FROM virtual_keys WHERE hot_path_pending AND id > $1
       UNION SELECT key_id FROM virtual_key_removals WHERE due_at <= clock_timestamp() AND key_id > $1
       ORDER BY id LIMIT $2`,
      [after, limit],
    );
    return rows.map((r) => r.id);
  }

  /** How many of the workspace's keys are active now. */
  async activeCount(workspaceId: string): Promise<number> {
    // hand-written: the status rule on the database clock (keyStatusSql).
    const [row]: { active: number }[] = await this.dataSource.query(
      `SELECT count(*)::int AS active FROM virtual_keys WHERE workspace_id = $1 AND ${keyStatusSql()} = 'active'`,
      [workspaceId],
    );
    return row.active;
  }

  /** Whether `agentId` holds an active key of the workspace (read in `manager`, e.g. a caller's transaction). */
  async hasActiveKey(manager: EntityManager, workspaceId: string, agentId: string): Promise<boolean> {
    // hand-written: the status rule on the database clock (keyStatusSql).
    const rows: unknown[] = await manager.query(
      `SELECT 1 FROM virtual_keys WHERE workspace_id = $1 AND agent_id = $2 AND ${keyStatusSql()} = 'active' LIMIT 1`,
      [workspaceId, agentId],
    );
    return rows.length > 0;
  }

  /** Unrevoked keys expiring in (`from`, `to`], soonest first. */
  expiring(from: Date, to: Date): Promise<Pick<VirtualKey, 'id' | 'workspaceId' | 'agentId' | 'expiresAt'>[]> {
    return this.dataSource.manager.find(VirtualKey, {
      select: { id: true, workspaceId: true, agentId: true, expiresAt: true },
      where: { revokedAt: IsNull(), expiresAt: And(MoreThan(from), LessThanOrEqual(to)) },
      order: { expiresAt: 'ASC' },
    });
  }
}
