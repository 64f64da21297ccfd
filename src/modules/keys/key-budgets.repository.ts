/**
 * The monthly caps of `virtual_keys`, as a fragment for usage's budget-threshold check: that check is
 * one statement per ingested batch (a measured hot path, bench/notifications.ts figure 3), so keys
 * hands it the text that reads its table instead of a round trip of its own (docs/decisions.md,
 * "Module ownership": statements composed from their owners' fragments).
 *
 * The keys with a cap among the `(workspace_id, key_id)` pairs given as two `text[]` parameters,
 * as `workspace_id, id, agent_id, cap` (`cap` numeric).
 */
export const cappedKeysAmong = (workspaceIds: string, keyIds: string): string =>
  // hand-written: the unnested batch pairs joined to the key rows, inside usage's one statement per batch.
  `SELECT k.workspace_id, k.id, k.agent_id, k.budget_micros_usd_month::numeric AS cap
   FROM unnest(${workspaceIds}::text[], ${keyIds}::text[]) AS b(workspace_id, key_id)
   JOIN virtual_keys k ON k.workspace_id = b.workspace_id AND k.id = b.key_id AND k.budget_micros_usd_month > 0`;
