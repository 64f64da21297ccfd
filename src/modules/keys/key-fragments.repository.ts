/**
 * Statements on keys' tables that run inside another module's statement: usage's projection and its
 * budget-threshold check are one statement per ingested batch, and a held call announces itself in the
 * statement that stores it (measured hot paths, bench/key-last-use.ts and bench/notifications.ts
 * figures 2 and 3), so keys hands them the text that reads or writes its tables
 * instead of a round trip of its own (docs/decisions.md, "Module ownership": a statement composed from
 * its owners' fragments). No other module names these tables.
 */

/**
 * The keys with a cap among the `(workspace_id, key_id)` pairs given as two `text[]` parameters,
 * as `workspace_id, id, agent_id, cap` (`cap` numeric).
 */
export const cappedKeysAmong = (workspaceIds: string, keyIds: string): string =>
  // hand-written: the unnested batch pairs joined to the key rows, inside usage's one statement per batch.
  `SELECT k.workspace_id, k.id, k.agent_id, k.budget_micros_usd_month::numeric AS cap
   FROM unnest(${workspaceIds}::text[], ${keyIds}::text[]) AS b(workspace_id, key_id)
   JOIN virtual_keys k ON k.workspace_id = b.workspace_id AND k.id = b.key_id AND k.budget_micros_usd_month > 0`;

/**
 * Records the latest use of each key named by the usage events of `source` (a relation with
 * `workspace_id`, `key_id`, `occurred_at`: the usage projection's inserted rows), as one upsert:
 * only keys of the event's own workspace, never moving `last_used_at` backwards. Rows in key order,
 * so two batches touching the same keys lock them in the same order.
 */
export const recordKeyUse = (source: string): string =>
  // hand-written: one upsert per projected batch inside usage's projection statement (bench/key-last-use.ts).
  `
  INSERT INTO virtual_key_usage AS u (key_id, workspace_id, last_used_at)
  SELECT k.id, k.workspace_id, s.at
  FROM (SELECT workspace_id, key_id, max(occurred_at) AS at FROM ${source} WHERE key_id IS NOT NULL GROUP BY 1, 2) s
  JOIN virtual_keys k ON k.id = s.key_id AND k.workspace_id = s.workspace_id
  ORDER BY 1
  ON CONFLICT (key_id) DO UPDATE SET last_used_at = EXCLUDED.last_used_at WHERE u.last_used_at < EXCLUDED.last_used_at`;

/** The agent of the key `keyId` of the workspace `workspaceId` (SQL expressions); null when there is none. */
export const agentOfKey = (workspaceId: string, keyId: string): string =>
  // hand-written: one probe of the key's primary key inside the held call's statement.
  `(SELECT k.agent_id FROM virtual_keys k WHERE k.workspace_id = ${workspaceId} AND k.id = ${keyId})`;
